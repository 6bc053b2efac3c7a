import type { Page } from 'playwright-core';
import { eventually } from '../support/eventually';
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
 * The audit log hides the dashboard's own reads by default (docs/DASHBOARD.md, "Areas"; the API's
 * exclude_dashboard_reads, docs/API.md#events): every page view is a few GET calls of the signed-in
 * person, which would otherwise bury what a program or a change did. A toggle shows them, kept in
 * the URL like the other filters. Against `npm start`'s in-process stack, in a real browser.
 */
describeIfChromium("dashboard: the audit log and the dashboard's own reads", () => {
  const dashboard = dashboardForSuite({ tenantName: 'Own Reads Co', roles: ['tenant_auditor'] });
  const auditor = SUBJECT('tenant_auditor');
  // The events' table, not the log's checkpoints below it.
  const rows = 'table:not([data-testid="checkpoints"] table) tbody tr';

  /** The auditor's rows: through the dashboard it only reads, so each one is a dashboard read. */
  const auditorRows = (page: Page) => page.locator(`${rows}:has([title="${auditor}"])`);
  const toggle = (page: Page) => page.getByLabel("Show the dashboard's own reads");

  it("when an auditor opens the audit log, then its own reads are hidden, a program's read shows, and the toggle (kept in the URL) shows them", async () => {
    // A program's read, with the tenant's key: never hidden, though it is a GET too.
    const program = await dashboard.api()('GET', '/v1/mandates?limit=1', { auth: dashboard.auth });
    expect(program.status).toBe(200);
    const programCall = await eventually(async () => {
      const res = await dashboard.api()(
        'GET',
        `/v1/events?type=API_CALL&key_id=${dashboard.keyId}&limit=100`,
        {
          auth: dashboard.auth,
        },
      );
      return (res.body.data as { id: string; data: { route: string; method: string; via?: string } }[]).find(
        (e) => e.data.route === '/v1/mandates' && e.data.method === 'GET',
      );
    });
    expect(programCall.data.via).toBe('api');

    const opened = await openPage(dashboard.browser);
    const { page } = opened;
    await devSignIn(page, dashboard.stack.url, dashboard.tenantId, auditor);
    await page.goto(`${dashboard.stack.url}/dashboard/audit`);
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    expect(await toggle(page).isChecked()).toBe(false);
    await page.locator(`${rows}[data-event="${programCall.id}"]`).waitFor();

    // Shown: the auditor's reads (this page's own among them), each a GET, and the toggle in the URL.
    await toggle(page).check();
    await eventually(async () => {
      if ((await auditorRows(page).count()) > 0) return true;
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
      return undefined;
    });
    expect(new URL(page.url()).searchParams.get('exclude_dashboard_reads')).toBe('false');
    const methods = await auditorRows(page).locator('code:not([title])').allTextContents();
    expect(methods.length).toBeGreaterThan(0);
    expect([...new Set(methods)]).toEqual(['GET']);
    // Their events say how they came: the API agrees with what the page shows.
    const shown = await auditorRows(page).first().getAttribute('data-event');
    const event = await dashboard.api()('GET', `/v1/events/${shown}`, { auth: dashboard.auth });
    expect(event.body).toMatchObject({
      type: 'API_CALL',
      actor: { subject_id: auditor },
      data: { via: 'dashboard' },
    });

    // A reload keeps the choice (it is in the URL).
    await page.reload();
    await page.locator(`${rows}[data-event="${shown}"]`).waitFor();
    expect(await toggle(page).isChecked()).toBe(true);

    // Hidden again: none of the auditor's reads, the program's read still there, the URL as at first.
    await toggle(page).uncheck();
    await page.locator(`${rows}[data-event="${programCall.id}"]`).waitFor();
    await page.locator(`${rows}[data-event="${shown}"]`).waitFor({ state: 'detached' });
    expect(await auditorRows(page).count()).toBe(0);
    expect(new URL(page.url()).searchParams.has('exclude_dashboard_reads')).toBe(false);

    // And by default, now that the log surely holds many of them: a fresh load hides them all.
    await page.goto(`${dashboard.stack.url}/dashboard/audit`);
    await page.locator(`${rows}[data-event="${programCall.id}"]`).waitFor();
    expect(await auditorRows(page).count()).toBe(0);
    expect(await toggle(page).isChecked()).toBe(false);
    expect(await axeViolations(page)).toEqual([]);
    await closeClean(opened);
  }, 120_000);
});
