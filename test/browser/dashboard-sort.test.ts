import { readFileSync } from 'node:fs';
import { README_MANDATE, eventually } from '../support/stack';
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
 * Sorting and totals in the dashboard's lists (issue 43, item 1; docs/DASHBOARD.md, "Sorting and totals"): the
 * total the API counts ("1–20 of 23"), a column header that turns the whole list around (the API's
 * `order`, never a sort of the page shown), with aria-sort and the keyboard, the order kept in the
 * URL across a reload, and the CSV export in that order. Against `npm start`'s in-process stack.
 */
describeIfChromium('dashboard: sorting and totals', () => {
  const suite = dashboardForSuite({ tenantName: 'Sort Co', roles: ['tenant_viewer', 'tenant_auditor'] });
  const call = (method: string, path: string, body?: unknown) =>
    suite.api()(method, path, { auth: suite.auth, ...(body === undefined ? {} : { body }) });
  const MANDATES = 23;
  const created: string[] = [];

  beforeAll(async () => {
    for (let i = 0; i < MANDATES; i++) {
      const res = await suite.api()('POST', '/v1/mandates', { auth: suite.auth, body: README_MANDATE });
      expect({ status: res.status }).toEqual({ status: 201 });
      created.push(res.body.id as string);
    }
  }, 120_000);

  it('when the Created header is pressed, then the whole list runs oldest first with its total, and a reload keeps it', async () => {
    const tab = await openPage(suite.browser);
    const { page } = tab;
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_viewer'));
    await page.goto(`${suite.stack.url}/dashboard/mandates`);
    const rows = () =>
      page.locator('tr[data-mandate]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-mandate')));
    const range = page.getByTestId('page-range');
    const header = page.getByRole('columnheader', { name: 'Created' });

    await page.locator(`tr[data-mandate="${created[MANDATES - 1]}"]`).waitFor();
    expect(await range.textContent()).toBe(`1–20 of ${MANDATES}`);
    expect(await header.getAttribute('aria-sort')).toBe('descending');
    expect(await rows()).toEqual([...created].reverse().slice(0, 20));

    // By the keyboard: the header's button takes focus and Enter presses it.
    await header.getByRole('button').focus();
    await page.keyboard.press('Enter');
    await eventually(async () =>
      (await header.getAttribute('aria-sort')) === 'ascending' ? true : undefined,
    );
    await page.locator(`tr[data-mandate="${created[0]}"]`).waitFor();
    // The oldest of all, not the visible page reversed: the API's order.
    expect(await rows()).toEqual(created.slice(0, 20));
    expect(new URL(page.url()).searchParams.get('order')).toBe('asc');
    expect(await page.getByRole('table').locator('caption').textContent()).toBe('Mandates, oldest first');

    await page.getByRole('button', { name: 'Next' }).click();
    await page.locator(`tr[data-mandate="${created[20]}"]`).waitFor();
    expect(await rows()).toEqual(created.slice(20));
    expect(await range.textContent()).toBe(`21–${MANDATES} of ${MANDATES}`);

    await page.reload();
    await page.locator(`tr[data-mandate="${created[0]}"]`).waitFor();
    expect(await rows()).toEqual(created.slice(0, 20));
    expect(await page.getByRole('columnheader', { name: 'Created' }).getAttribute('aria-sort')).toBe(
      'ascending',
    );
    expect(await range.textContent()).toBe(`1–20 of ${MANDATES}`);
    expect(await axeViolations(page)).toEqual([]);

    // The export follows the order shown: oldest first, every mandate.
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export CSV' }).click();
    const file = await (await download).path();
    const csv = readFileSync(file!, 'utf8');
    const exported = csv
      .split('\n')
      .slice(1)
      .map((line) => /mdt_[0-9a-z]{26}/.exec(line)?.[0])
      .filter((id): id is string => id !== undefined);
    expect(exported).toEqual(created);

    // Pressed again (a click this time): newest first, and the URL drops the default.
    await page.getByRole('columnheader', { name: 'Created' }).getByRole('button').click();
    await page.locator(`tr[data-mandate="${created[MANDATES - 1]}"]`).waitFor();
    expect(await rows()).toEqual([...created].reverse().slice(0, 20));
    expect(new URL(page.url()).searchParams.get('order')).toBeNull();
    await closeClean(tab);
  }, 120_000);

  it('when the list is laid out as cards on a phone (390 px), then a visible control above them turns the order around', async () => {
    const tab = await openPage(suite.browser);
    const { page } = tab;
    await page.setViewportSize({ width: 390, height: 844 });
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_viewer'));
    await page.goto(`${suite.stack.url}/dashboard/mandates`);
    await page.locator(`tr[data-mandate="${created[MANDATES - 1]}"]`).waitFor();
    await eventually(async () =>
      (await page.locator('.table-wrap').getAttribute('data-layout')) === 'cards' ? true : undefined,
    );
    const control = page.getByRole('button', { name: 'Created: newest first' });
    expect(await control.isVisible()).toBe(true);
    await control.click();
    await page.locator(`tr[data-mandate="${created[0]}"]`).waitFor();
    expect(new URL(page.url()).searchParams.get('order')).toBe('asc');
    expect(await page.getByRole('button', { name: 'Created: oldest first' }).isVisible()).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await closeClean(tab);
  }, 120_000);

  it('when the audit log is filtered, then it shows the total of its filter and sorts by time', async () => {
    const tab = await openPage(suite.browser);
    const { page } = tab;
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_auditor'));
    await page.goto(`${suite.stack.url}/dashboard/audit?type=MANDATE_CREATED&order=asc`);
    const range = page.getByTestId('page-range');
    // The creations reach the audit log from the bus.
    await eventually(
      async () =>
        (await range.textContent().catch(() => null)) === `1–23 of ${MANDATES}` ? true : undefined,
      30_000,
      'the total of MANDATE_CREATED events',
    );
    expect(await page.getByRole('columnheader', { name: 'Time (UTC)' }).getAttribute('aria-sort')).toBe(
      'ascending',
    );
    const oldestFirst = await suite.api()('GET', '/v1/events?type=MANDATE_CREATED&order=asc&limit=25', {
      auth: suite.auth,
    });
    expect(
      await page
        .locator('tr[data-event]')
        .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-event'))),
    ).toEqual(oldestFirst.body.data.map((e: { id: string }) => e.id));
    expect(await axeViolations(page)).toEqual([]);
    await closeClean(tab);
  }, 120_000);

  it("when an endpoint's deliveries are sorted by their Created header, then they run oldest first with their total, kept in the URL", async () => {
    const endpoint = await call('POST', '/v1/webhook-endpoints', {
      url: 'https://hooks.example.com/sorted',
      event_types: ['MANDATE_REVOKED'],
    });
    expect(endpoint.status).toBe(201);
    for (let i = 0; i < 3; i++)
      expect((await call('POST', `/v1/webhook-endpoints/${endpoint.body.id}/test`)).status).toBe(201);
    const path = `/v1/webhook-endpoints/${endpoint.body.id}/deliveries`;
    const listed = await eventually(async () => {
      const res = await call('GET', `${path}?order=asc`);
      return res.body.data.length === 3
        ? (res.body.data as { event_id: string }[]).map((d) => d.event_id)
        : undefined;
    });
    const tab = await openPage(suite.browser);
    const { page } = tab;
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_viewer'));
    await page.goto(`${suite.stack.url}/dashboard/webhooks?endpoint=${endpoint.body.id}`);
    const section = page.getByRole('region', { name: 'Deliveries to https://hooks.example.com/sorted' });
    const header = section.getByRole('columnheader', { name: 'Created' });
    await header.waitFor();
    expect(await header.getAttribute('aria-sort')).toBe('descending');
    // By the keyboard: the section sits under the sticky header, where a scripted click would land on it.
    await header.getByRole('button').focus();
    await page.keyboard.press('Space');
    await eventually(async () =>
      (await header.getAttribute('aria-sort')) === 'ascending' ? true : undefined,
    );
    expect(new URL(page.url()).searchParams.get('order')).toBe('asc');
    expect(await section.getByTestId('page-range').textContent()).toBe('1–3 of 3');
    // The rows in the API's oldest-first order: each row's event id, in its Event cell.
    expect(await section.locator('td[data-label="Event"] code').allTextContents()).toEqual(listed);
    expect(await axeViolations(page)).toEqual([]);
    await closeClean(tab);
  }, 120_000);
});
