import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MandateApiError, MandateClient, type Mandate } from '../../packages/client/src';
import { startProduct, type Product } from '../fuzz/product';

/**
 * The client against the whole product in this process (memory stores), as an integrator uses it:
 * the operator makes a tenant, the tenant's key creates, lists, verifies and revokes.
 */
describe('@mandate/client against the product', () => {
  let product: Product;
  beforeAll(async () => {
    product = await startProduct();
  }, 60_000);
  afterAll(async () => {
    await product.stop();
  });

  async function newTenant(baseUrl = product.url) {
    const operator = new MandateClient({ baseUrl: product.url, token: product.operatorToken });
    const { tenant, api_key } = await operator.platform.createTenant({ name: 'Client test' });
    const client = new MandateClient({
      baseUrl,
      apiKey: `${tenant.id}:${api_key.api_key}`,
      retry: { baseDelayMs: 1 },
    });
    return { tenantId: tenant.id, client };
  }

  it('when a tenant creates, lists, verifies and revokes with the client, then each answer is the typed resource', async () => {
    const { tenantId, client } = await newTenant();
    const created: Mandate[] = [];
    for (const n of [1, 2, 3])
      created.push(
        await client.mandates.create({
          principal: `customer-${n}`,
          delegate: { id: 'agent-7', type: 'agent' },
          scope: { actions: ['payments:create'], constraints: { max_amount: 5000, currency: 'EUR' } },
        }),
      );
    expect(created.map((m) => [m.tenant_id, m.state, m.version])).toEqual(
      Array(3).fill([tenantId, 'ACTIVE', 1]),
    );

    // Two a page: the iteration follows the cursor to the third, newest first.
    const listed: string[] = [];
    for await (const m of client.mandates.list({ state: 'ACTIVE', limit: 2 })) listed.push(m.id);
    expect(listed).toEqual(created.map((m) => m.id).reverse());

    const decision = await client.verify({
      mandate_id: created[0]!.id,
      action: 'payments:create',
      amount: 1200,
      currency: 'EUR',
    });
    expect(decision).toMatchObject({ decision: 'ALLOW', reason: 'OK', mandate_version: 1 });

    const revoked = await client.mandates.revoke(created[0]!.id, { reason: 'done' });
    expect(revoked).toMatchObject({ state: 'REVOKED', version: 2 });
    const error = await client.mandates.revoke(created[0]!.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MandateApiError);
    expect(error).toMatchObject({ status: 409, error: 'CONFLICT', requestId: expect.stringMatching(/\S/) });

    const me = await client.getMe();
    expect(me).toMatchObject({ tenant_id: tenantId, kind: 'api_key' });
    const keys = await client.apiKeys.list(tenantId).page();
    expect(keys.data.map((k) => k.status)).toEqual(['active']);
  });

  it('when the answer to a create is lost (a 503 after the gateway acted), then the retry carries the same key and the one mandate comes back', async () => {
    // A proxy that forwards everything, but answers the first POST with a 503 once the gateway has answered it.
    let lost = false;
    const replayed: (string | null)[] = [];
    const proxy: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(
            ([name]) => !['host', 'connection', 'content-length'].includes(name),
          ),
        ) as Record<string, string>;
        void fetch(product.url + req.url, {
          method: req.method,
          headers,
          ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
        }).then(async (answer) => {
          const text = await answer.text();
          if (req.method === 'POST') replayed.push(answer.headers.get('idempotent-replayed'));
          if (req.method === 'POST' && !lost) {
            lost = true;
            res.writeHead(503, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: 'SERVICE_UNAVAILABLE', message: 'lost on the way' }));
            return;
          }
          res.writeHead(answer.status, {
            'content-type': answer.headers.get('content-type') ?? 'application/json',
          });
          res.end(text);
        });
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const { client } = await newTenant(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
      const mandate = await client.mandates.create({ principal: 'customer-1', delegate: 'agent-7' });
      expect(replayed).toEqual([null, 'true']);
      const page = await client.mandates.list().page();
      expect(page.data.map((m) => m.id)).toEqual([mandate.id]);
    } finally {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});
