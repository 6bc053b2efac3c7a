import { apiClient, createTenant, eventually, startStack, type Stack } from '../support/stack';

/**
 * Issue 5 §2 end to end: a mandate past expires_at reads EXPIRED everywhere at once, the sweeper
 * (every 300 ms here) persists it and MANDATE_EXPIRED reaches the audit trail exactly once.
 * Exactly-once with two service instances racing is proven over one shared store in
 * services/mandates/test/expiry-sweeper.test.ts: without MongoDB here, two mandates processes
 * cannot share a store.
 */
describe('end to end: expiry and valid_from', () => {
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    stack = await startStack({ mandates: { EXPIRY_SWEEP_INTERVAL_MS: '300' } });
    api = apiClient(stack.gateway.url);
    // Generous: five processes starting on a loaded 2-core machine have taken over 90 s.
  }, 240_000);
  afterAll(async () => {
    await stack?.stop();
  }, 30_000);

  const newTenant = async () => (await createTenant(stack, { name: 'Expiry' })).auth;

  it('when expires_at passes, then get, list, verify and lifecycle calls all report EXPIRED, and MANDATE_EXPIRED is recorded exactly once', async () => {
    const auth = await newTenant();
    const expiresAt = Date.now() + 2_500;
    const created = await api('POST', '/v1/mandates', {
      auth,
      body: {
        principal: 'a',
        delegate: 'b',
        scope: { actions: ['payments:*'] },
        expires_at: new Date(expiresAt).toISOString(),
      },
    });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const verifyBody = { mandate_id: id, action: 'payments:create' };
    expect((await api('POST', '/v1/verify', { auth, body: verifyBody })).body).toMatchObject({
      decision: 'ALLOW',
    });

    // Waiting out expires_at is the scenario: the time itself is what expires the mandate.
    while (Date.now() <= expiresAt + 50) await new Promise((r) => setTimeout(r, 50));

    expect((await api('GET', `/v1/mandates/${id}`, { auth })).body).toMatchObject({ state: 'EXPIRED' });
    const listed = await api('GET', '/v1/mandates?state=EXPIRED', { auth });
    expect(listed.body.data.map((m: { id: string }) => m.id)).toEqual([id]);
    expect((await api('POST', '/v1/verify', { auth, body: verifyBody })).body).toMatchObject({
      decision: 'DENY',
      reason: 'MANDATE_EXPIRED',
      mandate_state: 'EXPIRED',
    });
    for (const op of ['suspend', 'reactivate', 'revoke']) {
      const res = await api('POST', `/v1/mandates/${id}/${op}`, { auth });
      expect({ op, status: res.status, body: res.body }).toEqual({
        op,
        status: 409,
        body: { error: 'CONFLICT', message: 'Mandate is expired' },
      });
    }

    // The sweeper persists it (version 2) and announces it once.
    await eventually(
      async () => ((await api('GET', `/v1/mandates/${id}`, { auth })).body.version === 2 ? true : undefined),
      15_000,
      'the sweeper to persist EXPIRED',
    );
    const events = await eventually(
      async () => {
        const res = await api('GET', `/v1/events?resource_id=${id}&type=MANDATE_EXPIRED`, { auth });
        return res.body.data.length > 0 ? res.body.data : undefined;
      },
      15_000,
      'MANDATE_EXPIRED in the audit trail',
    );
    // What is under test is that nothing more happens, however long later a duplicate would come:
    // a second mandate expires after the first was announced, so later sweeps demonstrably ran and
    // their events reached audit; then a third is created, and once its MANDATE_CREATED (the same
    // outbox, broker and consumer path) is in the trail, whatever those sweeps announced is too.
    const eventsOf = async (resourceId: string, type: string) =>
      (await api('GET', `/v1/events?resource_id=${resourceId}&type=${type}`, { auth })).body
        .data as unknown[];
    const later = await api('POST', '/v1/mandates', {
      auth,
      body: {
        principal: 'a',
        delegate: 'c',
        scope: { actions: ['payments:*'] },
        expires_at: new Date(Date.now() + 1_000).toISOString(),
      },
    });
    expect(later.status).toBe(201);
    await eventually(
      async () => ((await eventsOf(later.body.id, 'MANDATE_EXPIRED')).length > 0 ? true : undefined),
      20_000,
      "the second mandate's MANDATE_EXPIRED",
    );
    const marker = await api('POST', '/v1/mandates', {
      auth,
      body: { principal: 'a', delegate: 'd', scope: { actions: ['payments:*'] } },
    });
    expect(marker.status).toBe(201);
    await eventually(
      async () => ((await eventsOf(marker.body.id, 'MANDATE_CREATED')).length > 0 ? true : undefined),
      20_000,
      "the marker mandate's MANDATE_CREATED",
    );
    expect(await eventsOf(id, 'MANDATE_EXPIRED')).toHaveLength(1);
    expect(await eventsOf(later.body.id, 'MANDATE_EXPIRED')).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'MANDATE_EXPIRED',
      actor: { type: 'system' },
      data: { state: 'EXPIRED', version: 2 },
    });
    expect((await api('POST', '/v1/verify', { auth, body: verifyBody })).body).toMatchObject({
      decision: 'DENY',
      reason: 'MANDATE_EXPIRED',
      mandate_version: 2,
    });
  }, 60_000);

  it('when valid_from lies in the future, then verify denies with MANDATE_NOT_YET_VALID', async () => {
    const auth = await newTenant();
    const created = await api('POST', '/v1/mandates', {
      auth,
      body: { principal: 'a', delegate: 'b', valid_from: new Date(Date.now() + 3_600_000).toISOString() },
    });
    expect(created.status).toBe(201);
    const res = await api('POST', '/v1/verify', {
      auth,
      body: { mandate_id: created.body.id, action: 'anything' },
    });
    expect(res.body).toMatchObject({
      decision: 'DENY',
      reason: 'MANDATE_NOT_YET_VALID',
      mandate_state: 'ACTIVE',
      mandate_version: 1,
    });
  }, 30_000);
});
