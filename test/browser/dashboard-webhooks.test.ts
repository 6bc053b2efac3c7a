import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from '../support/stack';
import {
  SUBJECT,
  axeViolations,
  closeClean,
  dashboardForSuite,
  describeIfChromium,
  devSignIn,
  openPage,
} from './browser-support';

/**
 * Webhook debugging in the dashboard (issue 43, item 5; docs/WEBHOOKS.md, "Debugging a receiver"):
 * bodies as text, the success rate, "failing since" gone after a successful retry, replay of failed
 * deliveries behind a confirmation that says how many, and the event-type picker with descriptions.
 */
describeIfChromium('dashboard: webhook debugging', () => {
  // One retry 50 ms after the first attempt: a failing delivery is FAILED at once, nothing is retried later.
  // Ports of this suite's own (19200-19299): the gateway, and the receiver below.
  const suite = dashboardForSuite({
    tenantName: 'Hooks Co',
    env: { PORT: '19231', WEBHOOKS_RETRY_SCHEDULE: '0.05' },
  });
  /** Paths the receiver answers 500 with an HTML body; every other path gets 200 "ok". */
  const failing = new Set<string>();
  const HTML_ANSWER = '<b id="injected">receiver down</b>';
  let receiver: Server;
  let base = '';

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (failing.has(req.url ?? '')) {
          res.statusCode = 500;
          res.end(HTML_ANSWER);
        } else res.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(19232, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  const call = (method: string, path: string, body?: unknown) =>
    suite.api()(method, path, { auth: suite.auth, body });
  async function openAs(role: string) {
    const tab = await openPage(suite.browser);
    await devSignIn(tab.page, suite.stack.url, suite.tenantId, SUBJECT(role));
    await tab.page.goto(`${suite.stack.url}/dashboard/webhooks`);
    return tab;
  }
  /** An endpoint at `path` whose test delivery failed to the end (FAILED). */
  async function failedEndpoint(path: string, tests = 1) {
    failing.add(path);
    const created = await call('POST', '/v1/webhook-endpoints', {
      url: base + path,
      // Not ['*']: the test's own API calls (API_CALL events) would be delivered too.
      event_types: ['MANDATE_REVOKED'],
    });
    expect(created.status).toBe(201);
    for (let i = 0; i < tests; i++)
      expect((await call('POST', `/v1/webhook-endpoints/${created.body.id}/test`)).status).toBe(201);
    await eventually(async () => {
      const list = (await call('GET', `/v1/webhook-endpoints/${created.body.id}/deliveries`)).body.data;
      return list.length === tests && list.every((d: { status: string }) => d.status === 'FAILED')
        ? true
        : undefined;
    });
    return created.body as { id: string; url: string };
  }

  it('when a failing endpoint’s delivery is retried with success, then "failing since" goes; bodies show as text and copy whole; the success rate is shown', async () => {
    const endpoint = await failedEndpoint('/recovers');
    const tab = await openAs('tenant_admin');
    const { page } = tab;
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    const row = page.getByRole('row').filter({ hasText: endpoint.url });
    await row.getByText(/failing since/).waitFor();
    // The endpoints table's success rate over 24 hours, under the status: both attempts failed.
    await row.getByTestId('success-rate').getByText('24 h success rate: 0.0 %').waitFor();
    await page.getByRole('button', { name: `Deliveries ${endpoint.url}` }).click();
    const stats = page.getByTestId('endpoint-stats');
    await stats.getByText('0.0 % succeeded (0 of 2 attempts)').first().waitFor();

    await page.getByText('Request and responses').first().click();
    const [delivery] = (await call('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`)).body.data;
    const bodies = page.getByTestId('body-text');
    expect(await bodies.first().textContent()).toBe(delivery.request_body);
    // The receiver's HTML answer is text: shown as sent, never an element of the page.
    expect(await bodies.nth(1).textContent()).toBe(HTML_ANSWER);
    expect(await page.locator('#injected').count()).toBe(0);
    await page.getByRole('button', { name: 'Copy the request body' }).first().click();
    const copied = await page.evaluate(() =>
      (
        globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
      ).navigator.clipboard.readText(),
    );
    expect(copied).toBe(delivery.request_body);
    expect(await axeViolations(page)).toEqual([]);

    failing.delete('/recovers');
    await page.getByRole('button', { name: /^Retry/ }).click();
    await page.getByText(/Delivery retried/).waitFor();
    await row.getByText(/failing since/).waitFor({ state: 'detached' });
    await stats.getByText('33.3 % succeeded (1 of 3 attempts)').first().waitFor();
    await row.getByTestId('success-rate').getByText('24 h success rate: 33.3 %').waitFor();
    // Still a table at 1280 px, and the status reads plain "enabled" again, its rate under it.
    expect(await row.getByRole('cell', { name: /^enabled\s*24 h success rate: 33\.3 %$/ }).count()).toBe(1);
    expect(await page.locator('[data-layout]').first().getAttribute('data-layout')).toBe('table');
    await closeClean(tab);
  }, 120_000);

  it('when an admin replays failed deliveries, then the dialog says how many; Cancel sends nothing, the confirmation sends each again', async () => {
    const endpoint = await failedEndpoint('/replayed', 2);
    failing.delete('/replayed');
    const tab = await openAs('tenant_admin');
    const { page } = tab;
    await page.getByRole('button', { name: `Deliveries ${endpoint.url}` }).click();
    await page.getByRole('button', { name: 'Replay failed…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replay failed deliveries' });
    await dialog.waitFor();
    expect(await dialog.getByTestId('confirm-impact').textContent()).toMatch(
      new RegExp(`^2 failed deliveries to ${endpoint.url.replace(/[.?]/g, '\\$&')} created since `),
    );
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    const statuses = async () =>
      (await call('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`)).body.data.map(
        (d: { status: string }) => d.status,
      );
    expect(await statuses()).toEqual(['FAILED', 'FAILED']);
    await page.getByRole('button', { name: 'Replay failed…' }).click();
    await dialog.getByRole('button', { name: 'Replay 2' }).click();
    await dialog.waitFor({ state: 'detached' });
    await eventually(async () =>
      (await statuses()).every((s: string) => s === 'SUCCEEDED') ? true : undefined,
    );
    await closeClean(tab);
  }, 120_000);

  it('when an admin picks event types, then each shows what it means, and the endpoint is created and edited with the types picked', async () => {
    const tab = await openAs('tenant_admin');
    const { page } = tab;
    const url = `${base}/picked`;
    await page.getByLabel('URL (https)').fill(url);
    const picker = page.getByTestId('event-type-picker');
    await picker.getByLabel('All event types (*)').uncheck();
    await picker.getByText('A mandate was revoked, for good.').waitFor();
    await picker.getByLabel('MANDATE_REVOKED', { exact: true }).check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByTestId('secret').waitFor();
    const listed = async () =>
      (
        (await call('GET', '/v1/webhook-endpoints')).body.data as { url: string; event_types: string[] }[]
      ).find((e) => e.url === url);
    expect((await listed())?.event_types).toEqual(['MANDATE_REVOKED']);
    await page.getByRole('button', { name: `Edit event types ${url}` }).click();
    const dialog = page.getByRole('dialog', { name: `Event types of ${url}` });
    await dialog.getByLabel('API_KEY_REVOKED', { exact: true }).check();
    expect(await axeViolations(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Save event types' }).click();
    await dialog.waitFor({ state: 'detached' });
    await eventually(async () =>
      (await listed())?.event_types.join() === 'MANDATE_REVOKED,API_KEY_REVOKED' ? true : undefined,
    );
    await closeClean(tab);
  }, 120_000);
});
