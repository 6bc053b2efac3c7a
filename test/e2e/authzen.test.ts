import { startEmbedded, type EmbeddedStack } from '../../scripts/embedded';
import { apiClient, createTenant, eventually } from '../support/stack';

/**
 * AuthZEN through the gateway of `npm start` (docs/API.md#authzen): the standard's unversioned
 * paths, authentication and scope, tenant scoping, the events of a call, the metadata and the limits.
 */
describe('AuthZEN through the gateway (npm start)', () => {
  let stack: EmbeddedStack;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    stack = await startEmbedded(
      { PORT: '0', PATH: process.env.PATH, PUBLIC_BASE_URL: 'https://pdp.example.com' },
      true,
    );
    api = apiClient(stack.url);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  async function tenantWithMandates(name: string, n = 1) {
    const created = await createTenant(
      { gateway: { url: stack.url }, operatorToken: stack.operatorToken },
      { name },
    );
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const m = await api('POST', '/v1/mandates', {
        auth: created.auth,
        body: { principal: 'user_alice', delegate: 'agent_bob', scope: { actions: ['payments:*'] } },
      });
      expect(m.status).toBe(201);
      ids.push(m.body.id);
    }
    return { tenantId: created.tenant.id as string, auth: created.auth, ids };
  }
  const question = (mandateId: string, action = 'payments:create') => ({
    subject: { type: 'agent', id: 'agent_bob' },
    action: { name: action },
    resource: { type: 'mandate', id: mandateId },
  });

  it('when an evaluation and a batch are asked at the standard’s paths, then they answer as verify does, scoped to the tenant, with one event per item and one API_CALL per call', async () => {
    const { auth, ids } = await tenantWithMandates('AuthZEN A', 2);
    const other = await tenantWithMandates('AuthZEN B');

    const single = await api('POST', '/access/v1/evaluation', {
      auth,
      body: question(ids[0]!),
      headers: { 'x-request-id': 'req-authzen-one' },
    });
    const verify = await api('POST', '/v1/verify', {
      auth,
      body: { mandate_id: ids[0], action: 'payments:create', delegate_id: 'agent_bob' },
    });
    expect({
      status: single.status,
      body: single.body,
      requestId: single.headers.get('x-request-id'),
    }).toEqual({
      status: 200,
      body: {
        decision: true,
        context: {
          reason: 'OK',
          decision_id: verify.body.decision_id,
          mandate_id: ids[0],
          mandate_state: 'ACTIVE',
          mandate_version: 1,
        },
      },
      requestId: 'req-authzen-one',
    });

    const batch = await api('POST', '/access/v1/evaluations', {
      auth,
      body: {
        subject: { type: 'agent', id: 'agent_bob' },
        action: { name: 'payments:create' },
        evaluations: [
          { resource: { type: 'mandate', id: ids[0] } },
          { resource: { type: 'mandate', id: ids[1] }, action: { name: 'transfers:create' } },
          { resource: { type: 'mandate', id: other.ids[0] } },
        ],
      },
    });
    expect(batch.status).toBe(200);
    expect(
      batch.body.evaluations.map((e: { decision: boolean; context: { reason: string } }) => [
        e.decision,
        e.context.reason,
      ]),
    ).toEqual([
      [true, 'OK'],
      [false, 'ACTION_NOT_PERMITTED'],
      // Another tenant's mandate is unknown here.
      [false, 'MANDATE_NOT_FOUND'],
    ]);

    // Events: verify's own call, the single evaluation and the batch's two decided items; one API_CALL per call.
    const events = await eventually(async () => {
      const res = await api('GET', '/v1/events?type=VERIFICATION_PERFORMED,API_CALL&limit=100', { auth });
      const data = res.body.data as { type: string; data: { decision_id?: string; route?: string } }[];
      return data.filter((e) => e.type === 'VERIFICATION_PERFORMED').length >= 4 &&
        data.filter((e) => e.type === 'API_CALL' && e.data.route?.includes('/access/')).length >= 2
        ? data
        : undefined;
    }, 20_000);
    const verifications = events
      .filter((e) => e.type === 'VERIFICATION_PERFORMED')
      .map((e) => e.data.decision_id);
    expect(verifications.sort()).toEqual(
      [
        verify.body.decision_id,
        single.body.context.decision_id,
        ...batch.body.evaluations
          .slice(0, 2)
          .map((e: { context: { decision_id: string } }) => e.context.decision_id),
      ].sort(),
    );
    const calls = events
      .filter((e) => e.type === 'API_CALL' && e.data.route?.includes('/access/'))
      .map((e) => e.data.route);
    expect(calls.sort()).toEqual(['/v1/access/v1/evaluation', '/v1/access/v1/evaluations']);
  });

  it('when the caller has no credential or no verify scope, then it is 401 or 403; the metadata needs none', async () => {
    const { tenantId, auth, ids } = await tenantWithMandates('AuthZEN scopes');
    expect((await api('POST', '/access/v1/evaluation', { body: question(ids[0]!) })).status).toBe(401);
    const key = await api('POST', `/v1/tenants/${tenantId}/api-keys`, {
      auth,
      body: { name: 'reader', scopes: ['mandates:read'] },
    });
    const reader = `${tenantId}:${key.body.api_key}`;
    const refused = await api('POST', '/access/v1/evaluations', {
      auth: reader,
      body: { ...question(ids[0]!), evaluations: [{}] },
    });
    expect({ status: refused.status, error: refused.body.error }).toEqual({
      status: 403,
      error: 'FORBIDDEN',
    });

    const metadata = await api('GET', '/.well-known/authzen-configuration');
    expect({ status: metadata.status, body: metadata.body }).toEqual({
      status: 200,
      body: {
        policy_decision_point: 'https://pdp.example.com',
        access_evaluation_endpoint: 'https://pdp.example.com/access/v1/evaluation',
        access_evaluations_endpoint: 'https://pdp.example.com/access/v1/evaluations',
      },
    });
  });

  it('when a mandate is revoked while batches run, then each batch shows one state for it', async () => {
    const { auth, ids } = await tenantWithMandates('AuthZEN race');
    const body = { ...question(ids[0]!), evaluations: Array.from({ length: 20 }, () => ({})) };
    const batches = Array.from({ length: 4 }, () => api('POST', '/access/v1/evaluations', { auth, body }));
    const revoke = api('POST', `/v1/mandates/${ids[0]}/revoke`, { auth });
    const answers = await Promise.all(batches);
    expect((await revoke).status).toBe(200);
    for (const a of answers) {
      expect(a.status).toBe(200);
      const states = new Set(a.body.evaluations.map((e: { context: unknown }) => JSON.stringify(e.context)));
      expect(states.size).toBe(1);
    }
  });

  it('when a beta key sends a 100-item batch, then it spends its burst of 100, and the next batch is a 429 with Retry-After', async () => {
    const { tenantId, auth, ids } = await tenantWithMandates('AuthZEN limits');
    // A fresh key: its bucket is full (burst 100).
    const key = await api('POST', `/v1/tenants/${tenantId}/api-keys`, {
      auth,
      body: { name: 'pep', scopes: ['verify'] },
    });
    const pep = `${tenantId}:${key.body.api_key}`;
    const body = { ...question(ids[0]!), evaluations: Array.from({ length: 100 }, () => ({})) };
    const first = await api('POST', '/access/v1/evaluations', { auth: pep, body });
    expect({
      status: first.status,
      items: first.body.evaluations.length,
      remaining: Number(first.headers.get('ratelimit-remaining')) <= 2,
    }).toEqual({
      status: 200,
      items: 100,
      remaining: true,
    });
    const second = await api('POST', '/access/v1/evaluations', { auth: pep, body });
    expect({
      status: second.status,
      body: second.body,
      retryAfter: Number(second.headers.get('retry-after')) >= 1,
    }).toEqual({
      status: 429,
      body: { error: 'TOO_MANY_REQUESTS', message: 'Rate limit exceeded' },
      retryAfter: true,
    });
  });
});
