import { randomBytes } from 'node:crypto';
import { README_MANDATE, eventually } from '../support/stack';
import {
  SUBJECT,
  closeClean,
  dashboardForSuite,
  describeIfChromium,
  devSignIn,
  openPage,
} from './browser-support';

/**
 * Search in the dashboard (issue 43, item 4; docs/DASHBOARD.md, "Search"): the mandates list's
 * search (the API's `q`), filters kept in the URL across a reload, and the header's "Go to id".
 * Against `npm start`'s in-process stack, in a real browser.
 */
describeIfChromium('dashboard: search', () => {
  const suite = dashboardForSuite({ tenantName: 'Search Co', roles: ['tenant_viewer'] });

  async function openAs(role: string, path: string) {
    const tab = await openPage(suite.browser);
    await devSignIn(tab.page, suite.stack.url, suite.tenantId, SUBJECT(role));
    await tab.page.goto(`${suite.stack.url}/dashboard/${path}`);
    return tab;
  }
  const createMandate = async (delegate: { id: string; name?: string }) => {
    const res = await suite.api()('POST', '/v1/mandates', {
      auth: suite.auth,
      body: { ...README_MANDATE, delegate: { type: 'agent', ...delegate } },
    });
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
    return res.body as { id: string };
  };
  const param = (url: string, name: string) => new URL(url).searchParams.get(name);

  it('when part of a delegate id is searched in another case, then q finds that mandate only, and the search survives a reload', async () => {
    const tag = randomBytes(4).toString('hex');
    const wanted = await createMandate({ id: `agent:CheckoutBot-${tag.toUpperCase()}`, name: 'Checkout' });
    const other = await createMandate({ id: `agent:refunds-${tag}` });
    const tab = await openAs('tenant_viewer', 'mandates');
    const { page } = tab;
    const row = (id: string) => page.locator(`tr[data-mandate="${id}"]`);
    await row(other.id).waitFor();

    await page.getByLabel('Search', { exact: true }).fill(`checkoutbot-${tag}`);
    await eventually(async () => ((await row(other.id).count()) === 0 ? true : undefined));
    await row(wanted.id).waitFor();
    expect(await page.locator('tr[data-mandate]').count()).toBe(1);
    await eventually(async () => (param(page.url(), 'q') === `checkoutbot-${tag}` ? true : undefined));

    await page.reload();
    await row(wanted.id).waitFor();
    expect(await page.getByLabel('Search', { exact: true }).inputValue()).toBe(`checkoutbot-${tag}`);
    expect(await page.locator('tr[data-mandate]').count()).toBe(1);
    await closeClean(tab);
  }, 120_000);

  it("when the audit log and an endpoint's deliveries are filtered, then a reload shows the same filters and the same endpoint", async () => {
    const created = await suite.api()('POST', '/v1/webhook-endpoints', {
      auth: suite.auth,
      body: { url: 'https://hooks.example.com/search', event_types: ['MANDATE_REVOKED'] },
    });
    expect(created.status).toBe(201);
    const tab = await openAs('tenant_admin', 'audit');
    const { page } = tab;
    await page.getByLabel('Event type').selectOption('MANDATE_CREATED');
    await page.getByLabel('Resource id').fill('mdt_nothing');
    await eventually(async () => (param(page.url(), 'resource_id') === 'mdt_nothing' ? true : undefined));
    await page.reload();
    await page.getByText('No events.').waitFor();
    expect(await page.getByLabel('Event type').inputValue()).toBe('MANDATE_CREATED');
    expect(await page.getByLabel('Resource id').inputValue()).toBe('mdt_nothing');

    await page.goto(`${suite.stack.url}/dashboard/webhooks`);
    await page.getByRole('button', { name: 'Deliveries https://hooks.example.com/search' }).click();
    const deliveries = page.getByRole('heading', { name: 'Deliveries to https://hooks.example.com/search' });
    await deliveries.waitFor();
    await page.getByLabel('Status', { exact: true }).selectOption('FAILED');
    await eventually(async () => (param(page.url(), 'status') === 'FAILED' ? true : undefined));
    expect(param(page.url(), 'endpoint')).toBe(created.body.id);
    await page.reload();
    await deliveries.waitFor();
    expect(await page.getByLabel('Status', { exact: true }).inputValue()).toBe('FAILED');
    await closeClean(tab);
  }, 120_000);

  it("when an id is pasted into the header's search, then its page opens; an id of no known kind says so", async () => {
    const mandate = await createMandate({ id: 'agent_global_search' });
    const tab = await openAs('tenant_admin', 'audit');
    const { page } = tab;
    const box = page.getByRole('searchbox', { name: /Go to an id/ });

    await box.fill(` ${mandate.id.toUpperCase()} `);
    await box.press('Enter');
    await page.getByRole('heading', { level: 1, name: `Mandate ${mandate.id}` }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/mandates/${mandate.id}`);

    await box.fill(suite.keyId);
    await box.press('Enter');
    const key = page.getByRole('region', { name: 'API key' });
    await key.getByText('active').first().waitFor();
    expect(param(page.url(), 'key')).toBe(suite.keyId);

    const created = await eventually(async () => {
      const res = await suite.api()('GET', `/v1/events?type=MANDATE_CREATED&resource_id=${mandate.id}`, {
        auth: suite.auth,
      });
      return res.body.data?.[0] as { id: string } | undefined;
    });
    await box.fill(created.id);
    await box.press('Enter');
    const drawer = page.getByRole('dialog', { name: 'MANDATE_CREATED' });
    expect(await drawer.getByTestId('event-detail').textContent()).toContain(created.id);
    await drawer.getByRole('button', { name: /close/i }).first().click();
    await drawer.waitFor({ state: 'detached' });
    expect(param(page.url(), 'event')).toBeNull();

    await box.fill('zzz_0123');
    await box.press('Enter');
    const message = await page
      .getByRole('alert')
      .filter({ hasText: 'not an id this dashboard opens' })
      .textContent();
    expect(message).toContain('mdt_… (mandate)');
    expect(new URL(page.url()).pathname).toBe('/dashboard/audit');
    await closeClean(tab);
  }, 120_000);
});
