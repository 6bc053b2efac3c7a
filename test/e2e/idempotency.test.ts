import { newId } from '@mandate/shared/core';
import { apiClient, createTenant, eventually, startStack, type Stack } from '../support/stack';

/**
 * docs/API.md, "Idempotency" through the real gateway process, with its records in the real Redis and the audit
 * trail through the real RabbitMQ: concurrent retries of one create execute once.
 */
describe('end to end: Idempotency-Key on the real Redis and RabbitMQ', () => {
  // 50 creates at once would otherwise meet the beta burst of 10 on POST /mandates.
  const overrides = JSON.stringify({
    beta: {
      global: { rate: 500, burst: 1000 },
      endpoints: { 'mandates.create': { rate: 500, burst: 1000 } },
    },
  });
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    stack = await startStack({ gateway: { PLAN_OVERRIDES: overrides } });
    api = apiClient(stack.gateway.url);
  }, 90_000);
  afterAll(async () => {
    await stack?.stop();
  });

  const newTenant = async () =>
    (await createTenant(stack, { name: `Idem ${newId('req')}`, plan: 'beta' })).auth;
  const mandateBody = (delegate = 'agent_42') => ({
    principal: { id: 'user_alice', type: 'person' },
    delegate: { id: delegate, type: 'agent' },
    scope: { actions: ['payments:*'] },
  });

  it('when 50 identical creates with one key arrive at once, then one mandate, one signature and one MANDATE_CREATED exist and all 50 answers are the same', async () => {
    const auth = await newTenant();
    const key = `create-${newId('req')}`;
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        api('POST', '/v1/mandates', { auth, body: mandateBody(), headers: { 'idempotency-key': key } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(201));
    expect(new Set(results.map((r) => r.text)).size).toBe(1);
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(49);
    const id = results[0]!.body.id;

    const list = await api('GET', '/v1/mandates?limit=100', { auth });
    expect(list.body.data.map((m: { id: string }) => m.id)).toEqual([id]);
    expect(new Set(list.body.data.map((m: { signature: { jws: string } }) => m.signature.jws)).size).toBe(1);

    // Every API_CALL is published after its answer, and the create's event before it: once all 50
    // calls are in the trail, any second MANDATE_CREATED would be there too.
    await eventually(
      async () => {
        const calls = await api('GET', '/v1/events?type=API_CALL&limit=100', { auth });
        return calls.body.data.filter((e: { data: { route: string } }) => e.data.route === '/v1/mandates')
          .length >= 50
          ? true
          : undefined;
      },
      20_000,
      '50 API_CALL events',
    );
    const created = await api('GET', '/v1/events?type=MANDATE_CREATED&limit=100', { auth });
    expect(created.body.data.map((e: { resource: { id: string } }) => e.resource.id)).toEqual([id]);
  });

  it('when a create is retried later, then the same mandate is replayed; with another body the key is a 409', async () => {
    const auth = await newTenant();
    const key = `retry-${newId('req')}`;
    const first = await api('POST', '/v1/mandates', {
      auth,
      body: mandateBody(),
      headers: { 'idempotency-key': key },
    });
    const retry = await api('POST', '/v1/mandates', {
      auth,
      body: mandateBody(),
      headers: { 'idempotency-key': key },
    });
    expect(first.status).toBe(201);
    expect(retry).toMatchObject({ status: 201, text: first.text });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const other = await api('POST', '/v1/mandates', {
      auth,
      body: mandateBody('agent_other'),
      headers: { 'idempotency-key': key },
    });
    expect(other.status).toBe(409);
    expect(other.body).toEqual({
      error: 'CONFLICT',
      message: 'This Idempotency-Key was already used with a different request',
    });
    expect((await api('GET', '/v1/mandates', { auth })).body.data).toHaveLength(1);
  });

  it('when two tenants use the same key, then each gets its own mandate', async () => {
    const [a, b] = await Promise.all([newTenant(), newTenant()]);
    const key = `shared-${newId('req')}`;
    const ra = await api('POST', '/v1/mandates', {
      auth: a,
      body: mandateBody(),
      headers: { 'idempotency-key': key },
    });
    const rb = await api('POST', '/v1/mandates', {
      auth: b,
      body: mandateBody(),
      headers: { 'idempotency-key': key },
    });
    expect([ra.status, rb.status]).toEqual([201, 201]);
    expect(rb.headers.get('idempotent-replayed')).toBeNull();
    expect(ra.body.id).not.toBe(rb.body.id);
  });

  it('when a lifecycle call is retried with its key, then the transition happens once and the retry replays it instead of a 409', async () => {
    const auth = await newTenant();
    const created = await api('POST', '/v1/mandates', { auth, body: mandateBody() });
    const key = `suspend-${newId('req')}`;
    const path = `/v1/mandates/${created.body.id}/suspend`;
    const first = await api('POST', path, {
      auth,
      body: { reason: 'card lost' },
      headers: { 'idempotency-key': key },
    });
    const retry = await api('POST', path, {
      auth,
      body: { reason: 'card lost' },
      headers: { 'idempotency-key': key },
    });
    expect(first.status).toBe(200);
    expect(retry).toMatchObject({ status: 200, text: first.text });
    expect(retry.body.version).toBe(2);
    const without = await api('POST', path, { auth, body: { reason: 'card lost' } });
    expect(without.status).toBe(409);
  });
});
