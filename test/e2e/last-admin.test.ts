import { dashboardIssuers, startJwksServer, type JwksServer } from '../support/jwks-server';
import { apiClient, startStack, type Stack } from '../support/stack';

const AUDIENCE = 'mandate-api';
const LAST_ADMIN = 'Cannot revoke or downgrade the last active tenant_admin assignment: assign another first';

/**
 * docs/API.md: a tenant always keeps an administrator. Two dashboard admins (JWT subjects) of one tenant
 * revoke each other at the same moment through the gateway of the five-process stack (identity on
 * its memory store, the stack's default): exactly one revocation succeeds, the other is refused, and
 * the tenant keeps one active tenant_admin, who can still act.
 */
describe('the last tenant administrator end to end (five processes, JWT admins)', () => {
  let stack: Stack;
  let jwks: JwksServer;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    jwks = await startJwksServer();
    stack = await startStack({ gateway: { JWT_ISSUERS: dashboardIssuers(jwks, AUDIENCE) } });
    api = apiClient(stack.gateway.url);
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await jwks?.close();
  }, 30_000);

  /** A tenant whose admins are two dashboard subjects, each with a signed JWT. */
  async function tenantWithTwoAdmins() {
    const created = await api('POST', '/v1/platform/tenants', {
      auth: stack.operatorToken,
      body: { name: 'Two admins', plan: 'enterprise', admin_subject_id: 'dashboard:admin-a' },
    });
    expect(created.status).toBe(201);
    const tenantId = created.body.tenant.id as string;
    const key = `${tenantId}:${created.body.api_key.api_key}`;
    const base = `/v1/tenants/${tenantId}/role-assignments`;
    const second = await api('POST', base, {
      auth: key,
      body: { subject_id: 'dashboard:admin-b', roles: ['tenant_admin'] },
    });
    expect(second.status).toBe(201);
    const list = await api('GET', `${base}?status=active`, { auth: key });
    const idOf = (subject: string) =>
      list.body.data.find((a: { subject_id: string }) => a.subject_id === subject).id as string;
    const as = async (sub: string) => ({
      auth: await jwks.sign({ sub, aud: AUDIENCE }, { expiresIn: '10m' }),
      headers: { 'x-tenant-id': tenantId },
    });
    return {
      base,
      key,
      a: { id: idOf('dashboard:admin-a'), call: await as('admin-a') },
      b: { id: idOf('dashboard:admin-b'), call: await as('admin-b') },
    };
  }

  it('when two admins revoke each other at once, then exactly one wins, the other is refused, and one admin remains who can still act', async () => {
    const { base, key, a, b } = await tenantWithTwoAdmins();
    const [byA, byB] = await Promise.all([
      api('POST', `${base}/${b.id}/revoke`, a.call),
      api('POST', `${base}/${a.id}/revoke`, b.call),
    ]);
    // Exactly one wins. The other is refused either by the guarded write (409: its caller was still
    // an admin when the gateway authenticated it) or at the gateway (404: the winner's revocation
    // had already taken its caller's role, and no stale answer lets it act; docs/TROUBLESHOOTING.md).
    expect([
      [200, 404],
      [200, 409],
    ]).toContainEqual([byA.status, byB.status].sort());
    const refused = byA.status === 200 ? byB : byA;
    expect(refused.body).toEqual(
      refused.status === 409
        ? { error: 'CONFLICT', message: LAST_ADMIN }
        : { error: 'NOT_FOUND', message: 'Tenant not found' },
    );

    const active = await api('GET', `${base}?status=active`, { auth: key });
    const admins = active.body.data.filter((x: { roles: string[] }) => x.roles.includes('tenant_admin'));
    expect(admins).toHaveLength(1);
    const survivor = byA.status === 200 ? a : b;
    expect(admins[0].id).toBe(survivor.id);
    // The survivor still administers the tenant; and cannot be downgraded by the tenant's key either.
    const assigned = await api('POST', base, {
      ...survivor.call,
      body: { subject_id: 'dashboard:viewer', roles: ['tenant_viewer'] },
    });
    expect(assigned.status).toBe(201);
    expect(
      await api('PATCH', `${base}/${survivor.id}`, { auth: key, body: { roles: ['tenant_viewer'] } }),
    ).toMatchObject({ status: 409, body: { error: 'CONFLICT', message: LAST_ADMIN } });
  });
});
