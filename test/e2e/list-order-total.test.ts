import { startEmbedded, type EmbeddedStack } from '../../scripts/embedded';
import { apiClient, createTenant, eventually, README_MANDATE } from '../support/stack';

/**
 * `order` and `include_total` through the gateway (docs/API.md, "Lists and paging"): the parameters
 * reach the mandates and audit services as sent, a total counts the caller's tenant only, and a
 * cursor read in the other order is a 400 in the error envelope.
 */
describe('list order and totals through the gateway', () => {
  let stack: EmbeddedStack;
  beforeAll(async () => {
    stack = await startEmbedded({ PORT: '0', PATH: process.env.PATH }, true);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const tenant = (name: string) =>
    createTenant({ gateway: { url: stack.url }, operatorToken: stack.operatorToken }, { name });
  const get = (auth: string, path: string) => apiClient(stack.url)('GET', path, { auth });
  const create = async (auth: string) => {
    const res = await apiClient(stack.url)('POST', '/v1/mandates', { auth, body: README_MANDATE });
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
    return res.body.id as string;
  };
  /** Every page of `path` (which holds its own query), following next_cursor: ids and each page's total. */
  const walk = async (auth: string, path: string) => {
    const pages: { status: number; total: unknown; ids: string[] }[] = [];
    let cursor = '';
    for (let guard = 0; guard < 10; guard++) {
      const res = await get(auth, `${path}${cursor}`);
      pages.push({
        status: res.status,
        total: res.body.total,
        ids: res.body.data.map((i: { id: string }) => i.id),
      });
      if (!res.body.next_cursor) break;
      cursor = `&cursor=${res.body.next_cursor}`;
    }
    return pages;
  };

  it("when mandates and events are listed with order=asc and include_total, then pages run oldest first and every page counts this tenant's items", async () => {
    const acme = await tenant('Order Acme');
    const other = await tenant('Order Other');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await create(acme.auth));
    await create(other.auth);

    expect(await walk(acme.auth, '/v1/mandates?order=asc&include_total=true&limit=2')).toEqual([
      { status: 200, total: 3, ids: ids.slice(0, 2) },
      { status: 200, total: 3, ids: ids.slice(2) },
    ]);
    expect(await walk(acme.auth, '/v1/mandates?order=desc&include_total=true&limit=2')).toEqual([
      { status: 200, total: 3, ids: [ids[2], ids[1]] },
      { status: 200, total: 3, ids: [ids[0]] },
    ]);

    // The audit log stores the creations as they arrive from the bus.
    const created = '/v1/events?type=MANDATE_CREATED&include_total=true&limit=2';
    await eventually(
      async () => ((await get(acme.auth, created)).body.total === 3 ? true : undefined),
      30_000,
      'the three MANDATE_CREATED events',
    );
    const events = await walk(acme.auth, `${created}&order=asc`);
    expect(events.map((p) => ({ status: p.status, total: p.total, n: p.ids.length }))).toEqual([
      { status: 200, total: 3, n: 2 },
      { status: 200, total: 3, n: 1 },
    ]);
    const newestFirst = (await walk(acme.auth, created)).flatMap((p) => p.ids);
    expect(events.flatMap((p) => p.ids)).toEqual([...newestFirst].reverse());
  }, 60_000);

  it('when a cursor issued oldest first is sent newest first, then 400 in the error envelope, on both lists', async () => {
    const { auth } = await tenant('Order Mismatch');
    for (let i = 0; i < 2; i++) await create(auth);
    const message = 'cursor was issued for order=asc; ask with that order, or without the cursor';
    const mandates = await get(auth, '/v1/mandates?order=asc&limit=1');
    const refused = await get(auth, `/v1/mandates?limit=1&cursor=${mandates.body.next_cursor}`);
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 400,
      body: { error: 'BAD_REQUEST', message },
    });
    const events = await eventually(
      async () => {
        const res = await get(auth, '/v1/events?type=MANDATE_CREATED&order=asc&limit=1');
        return res.body.next_cursor ? res : undefined;
      },
      30_000,
      'two MANDATE_CREATED events',
    );
    const refusedEvents = await get(
      auth,
      `/v1/events?type=MANDATE_CREATED&cursor=${events.body.next_cursor}`,
    );
    expect({ status: refusedEvents.status, body: refusedEvents.body }).toEqual({
      status: 400,
      body: { error: 'BAD_REQUEST', message },
    });
    const badOrder = await get(auth, '/v1/mandates?order=newest');
    expect({ status: badOrder.status, body: badOrder.body }).toEqual({
      status: 400,
      body: { error: 'BAD_REQUEST', message: 'order must be one of: asc, desc' },
    });
  }, 60_000);
});
