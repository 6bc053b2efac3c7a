import { startEmbedded, type EmbeddedStack } from '../../scripts/embedded';
import { apiClient, createTenant, README_MANDATE } from '../support/stack';

/**
 * `GET /v1/mandates?q=` through the gateway (docs/API.md, "Mandates"): the parameter reaches the
 * mandates service as sent, its refusals keep the error envelope, and one tenant's search never
 * lists another's mandates.
 */
describe('mandate search through the gateway', () => {
  let stack: EmbeddedStack;
  beforeAll(async () => {
    stack = await startEmbedded({ PORT: '0', PATH: process.env.PATH }, true);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const tenant = (name: string) =>
    createTenant({ gateway: { url: stack.url }, operatorToken: stack.operatorToken }, { name });
  const create = async (auth: string, delegate: { id: string; name?: string }) => {
    const res = await apiClient(stack.url)('POST', '/v1/mandates', {
      auth,
      body: { ...README_MANDATE, delegate: { type: 'agent', ...delegate } },
    });
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
    return res.body.id as string;
  };
  const search = async (auth: string, q: string) => {
    const res = await apiClient(stack.url)('GET', `/v1/mandates?q=${encodeURIComponent(q)}`, { auth });
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200 });
    return (res.body.data as { id: string }[]).map((m) => m.id);
  };

  it("when q is part of a delegate id or name in another case, then only this tenant's matching mandates come back", async () => {
    const acme = await tenant('Search Acme');
    const other = await tenant('Search Other');
    const checkout = await create(acme.auth, { id: 'agent:CheckoutBot-7', name: 'Checkout' });
    const dotted = await create(acme.auth, { id: 'agent.v2(beta)', name: 'Ledger sync' });
    const others = await create(other.auth, { id: 'agent:checkoutbot-8', name: 'Ledger Sync' });

    expect(await search(acme.auth, 'CHECKOUTBOT')).toEqual([checkout]);
    expect(await search(acme.auth, 'ledger SYNC')).toEqual([dotted]);
    expect(await search(acme.auth, '.v2(b')).toEqual([dotted]);
    expect(await search(acme.auth, 'agent.*')).toEqual([]);
    expect(await search(other.auth, 'checkout')).toEqual([others]);
    expect(await search(other.auth, 'ledger')).toEqual([others]);
  }, 60_000);

  it.each([
    ['empty', '', 'q must not be empty'],
    ['201 characters', 'x'.repeat(201), 'q must be at most 200 characters'],
  ])(
    'when q is %s, then 400 in the error envelope',
    async (_case, q, message) => {
      const { auth } = await tenant('Search Refusals');
      const res = await apiClient(stack.url)('GET', `/v1/mandates?q=${q}`, { auth });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { error: 'BAD_REQUEST', message },
      });
    },
    60_000,
  );
});
