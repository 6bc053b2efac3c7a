import type { Scope } from '@mandate/gateway';
import type { Role } from '@mandate/identity';
import { dashboardIssuers, startJwksServer, type JwksServer } from '../support/jwks-server';
import { contractViolations, startRecordingProxy, type RecordingProxy } from '../support/contract-recorder';
import { describeRouteSecurity, type RouteSecurityContext } from '../support/route-security';
import { apiClient, eventually, startStack, type Stack } from '../support/stack';

const AUDIENCE = 'mandate-api';
const ALL_SCOPES: Scope[] = ['mandates:read', 'mandates:write', 'verify', 'events:read', 'tenants:admin'];
const ROLES: Role[] = ['tenant_admin', 'tenant_operator', 'tenant_viewer', 'tenant_auditor'];

/**
 * Every route of the gateway's table against the five services as processes, real RabbitMQ and
 * Redis, and a JWT issuer on loopback: the cases come from describeRouteSecurity, the fixture
 * (real resources of tenant A, keys, JWT subjects) is built here through the public API.
 */
describe('route security, end to end (every route in the table)', () => {
  let stack: Stack;
  let jwks: JwksServer;
  let ctx: RouteSecurityContext;
  // Every answer of the run passes through it, and is checked against its route's contract at the end.
  let proxy: RecordingProxy;

  beforeAll(async () => {
    jwks = await startJwksServer();
    stack = await startStack({
      // Identity verification on (a generated verifier; the TEST issuer is not needed here).
      identity: {
        WALLET_PUBLIC_URL: 'http://127.0.0.1:8080',
        WALLET_SUBJECT_SECRET: 'route-security-subject-secret-32-chars-min',
      },
      gateway: {
        JWT_ISSUERS: dashboardIssuers(jwks, AUDIENCE),
      },
    });
    proxy = await startRecordingProxy(stack.gateway.url);
    const api = apiClient(proxy.url);
    const ok = <T extends { status: number; body: any }>(res: T, status: number, what: string): T['body'] => {
      if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const tenant = async (name: string, admin: string) =>
      ok(
        await api('POST', '/v1/platform/tenants', {
          auth: stack.operatorToken,
          body: { name, plan: 'enterprise', admin_subject_id: admin },
        }),
        201,
        'tenant',
      );

    const a = await tenant('Tenant A', 'dashboard:rs-admin-a');
    const b = await tenant('Tenant B', 'dashboard:rs-stranger');
    const tenantId: string = a.tenant.id;
    const authA = `${tenantId}:${a.api_key.api_key}`;
    const keys = `/v1/tenants/${tenantId}/api-keys`;

    const mandate = ok(
      await api('POST', '/v1/mandates', {
        auth: authA,
        body: { principal: 'user_alice', delegate: 'agent_7', scope: { actions: ['payments:*'] } },
      }),
      201,
      'mandate',
    );
    // A spend authorization of the mandate (docs/API.md#budgets), for the /v1/authorizations/:id routes.
    const authorization = ok(
      await api('POST', `/v1/mandates/${mandate.id}/authorizations`, {
        auth: authA,
        body: { action: 'payments:create', amount: 100, currency: 'EUR' },
      }),
      201,
      'authorization',
    ).authorization;
    const keyWithout: Record<string, string> = {};
    for (const scope of ALL_SCOPES) {
      const created = ok(
        await api('POST', keys, {
          auth: authA,
          body: { name: `without ${scope}`, scopes: ALL_SCOPES.filter((s) => s !== scope) },
        }),
        201,
        'key',
      );
      keyWithout[scope] = `${tenantId}:${created.api_key}`;
    }
    const revoked = ok(
      await api('POST', keys, { auth: authA, body: { name: 'revoked', scopes: ALL_SCOPES } }),
      201,
      'key',
    );
    ok(await api('POST', `${keys}/${revoked.key_id}/revoke`, { auth: authA }), 200, 'revoke');

    const subjects: Record<string, string> = {};
    let assignmentId = '';
    for (const role of ROLES) {
      const subject = `dashboard:rs-${role}`;
      const created = ok(
        await api('POST', `/v1/tenants/${tenantId}/role-assignments`, {
          auth: authA,
          body: { subject_id: subject, roles: [role] },
        }),
        201,
        'role assignment',
      );
      assignmentId ||= created.id;
      subjects[role] = await jwks.sign(
        { sub: subject.slice('dashboard:'.length), aud: AUDIENCE },
        { expiresIn: '30m' },
      );
    }
    const onboarding = ok(
      await api('POST', '/v1/onboarding/request', {
        body: { organization_name: 'Prospect', contact_email: 'ops@prospect.example.com' },
      }),
      202,
      'onboarding',
    );
    const verification = ok(
      await api('POST', '/v1/identity-verifications', { auth: authA, body: { purpose: 'mandate' } }),
      201,
      'identity verification',
    );
    // A saved baseline, so its GET answers a full one (checked against the contract), not the nulls.
    ok(await api('PUT', `/v1/tenants/${tenantId}/access-baseline`, { auth: authA }), 200, 'access baseline');
    const event = await eventually(
      async () =>
        (await api('GET', '/v1/events?limit=1', { auth: authA })).body?.data?.[0]?.id as string | undefined,
      15_000,
      'an event of tenant A',
    );

    // A webhook endpoint (a public address: no receiver answers, which the routes here never need) and a delivery to it.
    const webhook = ok(
      await api('POST', '/v1/webhook-endpoints', {
        auth: authA,
        body: { url: 'https://93.184.215.14/hooks', event_types: ['MANDATE_REVOKED'] },
      }),
      201,
      'webhook endpoint',
    );
    const delivery = ok(
      await api('POST', `/v1/webhook-endpoints/${webhook.id}/test`, { auth: authA }),
      201,
      'webhook test delivery',
    );

    ctx = {
      baseUrl: proxy.url,
      tenantId,
      resources: {
        tenants: tenantId,
        mandates: mandate.id,
        authorizations: authorization.id,
        // Public: the mandate's own status list (docs/DECISIONS.md, "Status lists (v3)").
        'status-lists': String(new URL(mandate.status.status_list.uri).pathname.split('/').pop()),
        events: event,
        'api-keys': a.api_key.key_id,
        'role-assignments': assignmentId,
        'onboarding-requests': onboarding.id,
        'identity-verifications': verification.id,
        'webhook-endpoints': webhook.id,
        deliveries: delivery.id,
      },
      revokedKey: `${tenantId}:${revoked.api_key}`,
      keyWithout: (scope) => keyWithout[scope]!,
      stranger: { tenantId: b.tenant.id, key: `${b.tenant.id}:${b.api_key.api_key}` },
      jwt: {
        asRole: (role) => subjects[role]!,
        stranger: await jwks.sign({ sub: 'rs-stranger', aud: AUDIENCE }, { expiresIn: '30m' }),
      },
    };
  }, 120_000);

  afterAll(async () => {
    await proxy?.close();
    await stack?.stop();
    await jwks?.close();
  }, 30_000);

  describeRouteSecurity(() => ctx, {
    jwt: true,
    bodies: {
      'POST /v1/verify': (c) => ({ mandate_id: c.resources.mandates, action: 'payments:create' }),
      'POST /v1/mandates/:id/authorizations': () => ({
        action: 'payments:create',
        amount: 1,
        currency: 'EUR',
      }),
      'PATCH /v1/tenants/:tenantId/role-assignments/:id': () => ({ roles: ['tenant_viewer'] }),
      'PUT /v1/tenants/:tenantId/widget-config': () => ({ allowed_origins: ['https://shop.example.com'] }),
      'PATCH /v1/webhook-endpoints/:id': () => ({ description: 'route security' }),
      // A dry run: counts, changes nothing (the body is validated before the endpoint is looked up).
      'POST /v1/webhook-endpoints/:id/replay': () => ({ since: '2026-01-01T00:00:00Z', dry_run: true }),
      // Public routes: bodies that let them be served (or refused for the reason named below).
      'POST /v1/onboarding/request': () => ({
        organization_name: 'Route security',
        contact_email: 'ops@route-security.example.com',
      }),
      'POST /v1/identity-verifications/sign-in': (c) => ({ tenant_id: c.tenantId }),
      'POST /v1/identity-verifications/:id/poll': () => ({ poll_token: 'not-the-poll-token' }),
      'POST /v1/identity-verifications/:id/token': () => ({ poll_token: 'not-the-poll-token' }),
    },
    publicAnswers: {
      'POST /v1/identity-verifications/:id/response': {
        status: 400,
        error: 'BAD_REQUEST',
        reason: 'no wallet answers here',
      },
      'POST /v1/identity-verifications/:id/poll': {
        status: 404,
        error: 'NOT_FOUND',
        reason: 'only the signing-in browser holds the poll_token',
      },
      'POST /v1/identity-verifications/:id/token': {
        status: 404,
        error: 'NOT_FOUND',
        reason: 'only the signing-in browser holds the poll_token',
      },
    },
  });

  it('when every answer of this run is checked against the contract of its route, then each status is declared and each body matches', () => {
    expect(proxy.records.length).toBeGreaterThan(100);
    expect(contractViolations(proxy.records)).toEqual([]);
  });
});
