import type { Page } from 'playwright-core';
import { eventually, README_MANDATE } from '../support/stack';
import {
  SUBJECT,
  closeClean,
  dashboardForSuite,
  describeIfChromium,
  devSignIn,
  expectAccessible,
  openPage,
} from './browser-support';

/**
 * The dashboard's three charts in a real browser against `npm start`'s in-process stack: ALLOW and
 * DENY over time on the Verification page (GET /v1/events/verification-stats), the tenant's use
 * per day of the month on Billing (GET /v1/usage's `daily`), and mandates by state on Governance —
 * each with its numbers in a table, no console error and no serious or critical axe-core violation.
 */
describeIfChromium('dashboard charts in a real browser', () => {
  const dashboard = dashboardForSuite({ tenantName: 'Charts Co' });
  /** A call with the tenant's first API key (every scope). */
  const asKey = (method: string, p: string, body?: unknown) =>
    dashboard.api()(method, p, { auth: dashboard.auth, body });

  async function signedIn(area: string): Promise<{ page: Page; errors: string[] }> {
    const opened = await openPage(dashboard.browser);
    await devSignIn(opened.page, dashboard.stack.url, dashboard.tenantId, SUBJECT('tenant_admin'));
    await opened.page.goto(`${dashboard.stack.url}/dashboard/${area}`);
    return opened;
  }

  /** The chart's numbers, from its table: the sum of every value cell of `series` (or of the only one). */
  const chartSum = (page: Page, testId: string, series?: string) =>
    page
      .getByTestId(testId)
      .locator(`td[data-testid^="${testId}-"]${series ? `[data-testid$="-${series}"]` : ''}`)
      .allTextContents()
      .then((cells) => cells.reduce((sum, c) => sum + Number(c), 0));

  async function verificationEvents(): Promise<{ allow: number; deny: number }> {
    const res = await asKey('GET', '/v1/events?type=VERIFICATION_PERFORMED&limit=100');
    expect(res.status).toBe(200);
    const decisions = (res.body.data as { data: { decision: string } }[]).map((e) => e.data.decision);
    return {
      allow: decisions.filter((d) => d === 'ALLOW').length,
      deny: decisions.filter((d) => d === 'DENY').length,
    };
  }

  it('when verifications were made (some ALLOW, some DENY), then the Verification page charts them per hour and per day and lists the newest; one more from the playground joins them', async () => {
    const mandate = await asKey('POST', '/v1/mandates', README_MANDATE);
    expect(mandate.status).toBe(201);
    const verify = (action: string, amount?: number) =>
      asKey('POST', '/v1/verify', {
        mandate_id: mandate.body.id,
        action,
        ...(amount === undefined ? {} : { amount, currency: 'EUR' }),
      });
    for (const amount of [100, 200, 300])
      expect((await verify('payments:create', amount)).body.decision).toBe('ALLOW');
    // Over max_amount, and an action outside the scope.
    expect((await verify('payments:create', 90_000)).body.decision).toBe('DENY');
    expect((await verify('files:delete')).body.decision).toBe('DENY');
    await eventually(
      async () => {
        const { allow, deny } = await verificationEvents();
        return allow === 3 && deny === 2 ? true : undefined;
      },
      10_000,
      'five VERIFICATION_PERFORMED events',
    );

    const { page, errors } = await signedIn('verify');
    await page.getByRole('heading', { level: 1, name: 'Verification playground' }).waitFor();
    const chart = page.getByTestId('verifications');
    await chart.waitFor();
    expect(await chartSum(page, 'verifications', 'allow')).toBe(3);
    expect(await chartSum(page, 'verifications', 'deny')).toBe(2);
    // 24 hourly bars, the current hour (UTC) last.
    expect(await chart.locator('tbody tr').count()).toBe(24);
    expect(await chart.locator('tbody tr').last().getAttribute('data-key')).toBe(
      new Date().toISOString().slice(0, 13),
    );
    expect(await page.getByTestId('recent-verification').count()).toBe(5);
    expect(await page.getByRole('img', { name: /3 ALLOW and 2 DENY/ }).count()).toBe(1);

    // One more, from the playground: ALLOW.
    await page.getByLabel('Mandate id').fill(mandate.body.id);
    await page.getByLabel('Action').fill('payments:create');
    await page.getByLabel('Amount (minor units)').fill('500');
    await page.getByLabel('Currency').fill('EUR');
    await page.getByRole('button', { name: 'Verify', exact: true }).click();
    expect(await page.getByTestId('decision').textContent()).toBe('ALLOW');
    await eventually(
      async () => {
        if ((await chartSum(page, 'verifications', 'allow')) === 4) return true;
        await page.getByRole('button', { name: 'Refresh' }).click();
        return undefined;
      },
      10_000,
      'the playground verification in the chart',
    );
    expect(await page.getByTestId('verification-totals').textContent()).toContain('4 ALLOW, 2 DENY');
    await chart.getByText('Show the numbers').click();
    await page.waitForLoadState('networkidle');
    await expectAccessible(page, 'charts-verifications-24h');

    await page.getByRole('button', { name: 'Last 14 days, per day' }).click();
    await eventually(
      async () => ((await chart.locator('tbody tr').count()) === 14 ? true : undefined),
      10_000,
      'the 14-day chart',
    );
    expect(await chart.locator('tbody tr').last().getAttribute('data-key')).toBe(
      new Date().toISOString().slice(0, 10),
    );
    expect(await chartSum(page, 'verifications', 'allow')).toBe(4);
    expect(await chartSum(page, 'verifications', 'deny')).toBe(2);
    await expectAccessible(page, 'charts-verifications-14d');
    await closeClean({ page, errors });
  }, 120_000);

  it("when the tenant's key made API calls today, then Billing's month chart has a bar for every day of the month so far and today's holds them", async () => {
    for (let i = 0; i < 7; i++) expect((await asKey('GET', '/v1/mandates')).status).toBe(200);
    const usage = await asKey('GET', '/v1/usage');
    expect(usage.status).toBe(200);
    const today = new Date().toISOString().slice(0, 10);
    const counted = usage.body.daily.find((d: { date: string }) => d.date === today).used as number;
    expect(counted).toBeGreaterThanOrEqual(8);

    const { page, errors } = await signedIn('billing');
    await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
    const chart = page.getByTestId('daily');
    await chart.waitFor();
    expect(await chart.locator('tbody tr').count()).toBe(new Date().getUTCDate());
    // The page's own calls (the signed-in subject's) come on top of the key's.
    const shown = Number(await page.getByTestId(`daily-${today}`).textContent());
    expect(shown).toBeGreaterThanOrEqual(counted);
    expect(Number(await page.getByTestId('today-used').textContent())).toBe(shown);
    expect(await chartSum(page, 'daily')).toBe(Number(await page.getByTestId('month-total').textContent()));
    await chart.getByText('Show the numbers').click();
    await page.waitForLoadState('networkidle');
    await expectAccessible(page, 'charts-billing-month');
    await closeClean({ page, errors });
  }, 120_000);

  it('when mandates are in several states, then Governance charts mandates by state with the counts', async () => {
    const before = await asKey('GET', '/v1/mandates?limit=100');
    const active = (before.body.data as { state: string }[]).filter((m) => m.state === 'ACTIVE').length;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const m = await asKey('POST', '/v1/mandates', README_MANDATE);
      expect(m.status).toBe(201);
      ids.push(m.body.id);
    }
    expect((await asKey('POST', `/v1/mandates/${ids[0]}/suspend`, { reason: 'charts' })).status).toBe(200);
    expect((await asKey('POST', `/v1/mandates/${ids[1]}/revoke`, { reason: 'charts' })).status).toBe(200);

    const { page, errors } = await signedIn('governance');
    await page.getByRole('heading', { level: 1, name: 'Governance' }).waitFor();
    await page.getByTestId('state-count').waitFor();
    const count = async (state: string) =>
      Number(await page.getByTestId(`state-count-${state}`).textContent());
    expect({
      ACTIVE: await count('ACTIVE'),
      SUSPENDED: await count('SUSPENDED'),
      REVOKED: await count('REVOKED'),
      EXPIRED: await count('EXPIRED'),
    }).toEqual({ ACTIVE: active + 1, SUSPENDED: 1, REVOKED: 1, EXPIRED: 0 });
    expect(
      await page
        .getByRole('img', {
          name: `Mandates by state: ACTIVE ${active + 1}, SUSPENDED 1, REVOKED 1, EXPIRED 0`,
        })
        .count(),
    ).toBe(1);
    await page.waitForLoadState('networkidle');
    await expectAccessible(page, 'charts-governance-states');
    await closeClean({ page, errors });
  }, 120_000);
});
