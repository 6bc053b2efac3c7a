import { startEmbedded, type EmbeddedStack } from '../../../scripts/embedded';
import { apiClient, eventually } from '../../../test/support/stack';

/** docs/API.md, "Idempotency" on the whole product in one process (`npm start`): the memory idempotency store. */
describe('Idempotency-Key in embedded mode (memory store)', () => {
  let stack: EmbeddedStack;
  let api: ReturnType<typeof apiClient>;
  beforeAll(async () => {
    // 50 creates at once would otherwise meet the beta burst of 10 on POST /mandates.
    const PLAN_OVERRIDES = JSON.stringify({
      beta: { endpoints: { 'mandates.create': { rate: 500, burst: 1000 } } },
    });
    stack = await startEmbedded({ PORT: '0', PATH: process.env.PATH, PLAN_OVERRIDES }, true);
    api = apiClient(stack.url);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('when 50 identical creates with one key arrive at once, then one mandate, one signature and one MANDATE_CREATED exist and 49 answers are replays', async () => {
    const tenant = await api('POST', '/v1/platform/tenants', {
      auth: stack.operatorToken,
      body: { name: 'Acme', plan: 'beta' },
    });
    const auth = `${tenant.body.tenant.id}:${tenant.body.api_key.api_key}`;
    const body = {
      principal: 'user_alice',
      delegate: { id: 'agent_42', type: 'agent' },
      scope: { actions: ['payments:*'] },
    };
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        api('POST', '/v1/mandates', { auth, body, headers: { 'idempotency-key': 'order-4711' } }),
      ),
    );
    expect(new Set(results.map((r) => `${r.status} ${r.text}`))).toEqual(
      new Set([`201 ${results[0]!.text}`]),
    );
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(49);

    const list = await api('GET', '/v1/mandates?limit=100', { auth });
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0].signature.jws).toBe(results[0]!.body.signature.jws);
    await eventually(async () => {
      const calls = await api('GET', '/v1/events?type=API_CALL&limit=100', { auth });
      return calls.body.data.length >= 51 ? true : undefined;
    });
    const created = await api('GET', '/v1/events?type=MANDATE_CREATED', { auth });
    expect(created.body.data.map((e: { resource: { id: string } }) => e.resource.id)).toEqual([
      results[0]!.body.id,
    ]);
  });
});
