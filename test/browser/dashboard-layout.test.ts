import { OPERATOR_AREAS, TENANT_AREAS } from '../../packages/dashboard/src/areas';
import { README_MANDATE, eventually } from '../support/stack';
import {
  ROLE_AREAS,
  DESKTOP,
  SMALL_LAPTOP,
  SUBJECT,
  TABLET,
  WIDTHS,
  allAxeViolations,
  closeClean,
  dashboardForSuite,
  describeIfChromium,
  devSignIn,
  horizontalOverflow,
  insideScroll,
  laidOut,
  openPage,
  operatorSignIn,
  truncatedBadges,
  truncatedButtons,
  truncatedReasons,
  type AreaId,
} from './browser-support';

/**
 * The dashboard as a product (issue 28): every area each role opens, at 1440 px (a desktop), 1280 px, 1024 px (a small
 * laptop, a tablet held sideways), 768 px (a tablet) and 390 px (a phone), fits the window (no
 * horizontal scroll), shows every badge's whole word (no "A…" for ACTIVE) and every button's whole
 * label (no "Sign ou"), logs no console error, and at 1440, 1280 and 390 px has no axe-core violation of
 * any impact. Down to 768 px nothing
 * scrolls sideways inside itself either: a table too wide for its place shows its rows as cards
 * rather than hiding its last columns (as the API keys table once hid Rotate/Revoke); at 390 px a
 * card may still scroll, a long id's last resort. Creating a mandate and revoking one (typing its
 * short id) work end to end in the browser.
 */
const PATHS = Object.fromEntries([...TENANT_AREAS, ...OPERATOR_AREAS].map((a) => [a.id, a.path])) as Record<
  AreaId,
  string
>;

describeIfChromium('dashboard layout and accessibility at 1440, 1280, 1024, 768 and 390 px', () => {
  const suite = dashboardForSuite({
    tenantName: 'Layout Co',
    roles: ['tenant_operator', 'tenant_viewer', 'tenant_auditor'],
  });

  beforeAll(async () => {
    // Something in the lists: a limited mandate, a suspended one, a verification of each, and one
    // over the limit (its reason compared in words: AMOUNT_EXCEEDS_LIMIT).
    const api = suite.api();
    const limited = await api('POST', '/v1/mandates', { auth: suite.auth, body: README_MANDATE });
    expect(limited.status).toBe(201);
    const paused = await api('POST', '/v1/mandates', {
      auth: suite.auth,
      body: { ...README_MANDATE, delegate: { id: 'agent_paused', type: 'agent' } },
    });
    expect(paused.status).toBe(201);
    expect(
      (
        await api('POST', `/v1/mandates/${paused.body.id}/suspend`, {
          auth: suite.auth,
          body: { reason: 'x' },
        })
      ).status,
    ).toBe(200);
    for (const [id, amount] of [
      [limited.body.id, 1200],
      [paused.body.id, 1200],
      [limited.body.id, 120000],
    ])
      expect(
        (
          await api('POST', '/v1/verify', {
            auth: suite.auth,
            body: { mandate_id: id, action: 'payments:create', amount, currency: 'EUR' },
          })
        ).status,
      ).toBe(200);
  }, 60_000);

  /**
   * Each area of `areas`, loaded once at 1280 px and then narrowed to 1024, 768 and 390 px (as a
   * window is resized or a tablet turned): fits at each width, no badge cut, nothing scrolling
   * inside itself (at 390 px but a table), no axe violation at 1280 and 390 px; a finding names
   * the area and width.
   */
  async function expectAreasFit(
    page: Parameters<typeof horizontalOverflow>[0],
    who: string,
    areas: AreaId[],
  ) {
    const [laptop, phone] = WIDTHS;
    for (const area of areas) {
      await page.setViewportSize(laptop);
      await page.goto(`${suite.stack.url}/dashboard${PATHS[area]}`);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      await page.waitForLoadState('networkidle');
      for (const viewport of [DESKTOP, laptop, SMALL_LAPTOP, TABLET, phone]) {
        await page.setViewportSize(viewport);
        await laidOut(page);
        const found = {
          who,
          area,
          width: viewport.width,
          overflow: await horizontalOverflow(page),
          scrollsInside: await insideScroll(page, { tablesMayScroll: viewport === phone }),
          truncatedBadges: await truncatedBadges(page),
          truncatedButtons: await truncatedButtons(page),
          truncatedReasons: await truncatedReasons(page),
          violations:
            viewport === DESKTOP || viewport === laptop || viewport === phone
              ? await allAxeViolations(page)
              : [],
          // The tab bypasses the CSP (for axe), so a <style> Mantine would inject (which style-src
          // 'self' refuses in a real browser) is looked for here.
          styleTags: await page.locator('style').count(),
        };
        expect(found).toEqual({
          who,
          area,
          width: viewport.width,
          overflow: 0,
          scrollsInside: [],
          truncatedBadges: [],
          truncatedButtons: [],
          truncatedReasons: [],
          violations: [],
          styleTags: 0,
        });
      }
    }
  }

  it.each(Object.keys(ROLE_AREAS))(
    'when %s opens each of its areas at 1440, 1280, 1024, 768 and 390 px, then none scrolls sideways (nor, down to 768 px, anything inside it), no badge is cut, none has an axe violation, and no console error is logged',
    async (role) => {
      const opened = await openPage(suite.browser);
      await devSignIn(opened.page, suite.stack.url, suite.tenantId, SUBJECT(role));
      await expectAreasFit(opened.page, role, ROLE_AREAS[role]!);
      await closeClean(opened);
    },
    300_000,
  );

  it('when the system asks for dark, then every area of an admin is dark, and has no axe violation (its contrast included)', async () => {
    const opened = await openPage(suite.browser);
    const { page } = opened;
    await page.emulateMedia({ colorScheme: 'dark' });
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_admin'));
    const found: Record<string, unknown> = {};
    for (const area of TENANT_AREAS) {
      await page.goto(`${suite.stack.url}/dashboard${area.path}`);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      await page.waitForLoadState('networkidle');
      await laidOut(page);
      const scheme = await page.locator('html').getAttribute('data-mantine-color-scheme');
      // The page's own background, as a sum of its channels: dark is well under half of 765.
      const background = await page.evaluate(() => {
        const doc = (globalThis as unknown as { document: { body: unknown } }).document;
        const style = (
          globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }
        ).getComputedStyle(doc.body);
        return (style.backgroundColor.match(/\d+/g) ?? []).slice(0, 3).reduce((a, b) => a + Number(b), 0);
      });
      found[area.id] = { scheme, dark: background < 200, violations: await allAxeViolations(page) };
    }
    expect(found).toEqual(
      Object.fromEntries(TENANT_AREAS.map((a) => [a.id, { scheme: 'dark', dark: true, violations: [] }])),
    );
    await closeClean(opened);
  }, 240_000);

  it('when the operator opens the operator console at 1440, 1280, 1024, 768 and 390 px, then it fits (nothing scrolling inside it down to 768 px), no badge is cut, it has no axe violation and logs no error', async () => {
    const opened = await openPage(suite.browser);
    await operatorSignIn(opened.page, suite.stack.url, suite.stack.operatorToken);
    await expectAreasFit(opened.page, 'operator', ['operator']);
    await closeClean(opened);
  }, 120_000);

  it.each([
    { width: 1440, height: 900 },
    { width: 390, height: 844 },
  ])(
    'when a denial is listed in the audit log and the playground at $width px, then its reason is shown whole, in words, with the comparison',
    async (viewport) => {
      const opened = await openPage(suite.browser);
      const { page } = opened;
      await page.setViewportSize(viewport);
      await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_operator'));
      const said = "Amount 1,200.00 EUR exceeds the mandate's limit of 500.00 EUR per call.";
      for (const [area, where] of [
        ['audit', 'table'],
        ['verify', '[data-testid="recent-verification"]'],
      ] as const) {
        await page.goto(`${suite.stack.url}/dashboard${PATHS[area]}`);
        // The other tests' API calls would push the verifications past the log's first page.
        if (area === 'audit') await page.getByLabel('Event type').selectOption('VERIFICATION_PERFORMED');
        const reason = page.locator(`${where} [data-reason="AMOUNT_EXCEEDS_LIMIT"]`).first();
        await reason.filter({ hasText: said }).waitFor();
        expect(await reason.textContent()).toBe(said);
        await laidOut(page);
        expect({
          area,
          truncatedReasons: await truncatedReasons(page),
          overflow: await horizontalOverflow(page),
        }).toEqual({
          area,
          truncatedReasons: [],
          overflow: 0,
        });
      }
      await closeClean(opened);
    },
    120_000,
  );

  it('when the sign-in page is shown at 390 px, then it fits and the signed-in navigation opens from the menu button', async () => {
    const opened = await openPage(suite.browser);
    const { page } = opened;
    await page.setViewportSize(WIDTHS[1]);
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_admin'));
    const nav = page.locator('nav[aria-label="Areas"]');
    expect(await nav.isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Open the navigation' }).click();
    await nav.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    // A choice closes the menu again.
    expect(await nav.isVisible()).toBe(false);
    expect(await horizontalOverflow(page)).toBe(0);
    await closeClean(opened);
  }, 120_000);

  it('when an admin creates a mandate from the form with a limit in major units, then the result shows its signature and status-list slot, and the API holds the limit in minor units', async () => {
    const opened = await openPage(suite.browser);
    const { page } = opened;
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_admin'));
    await page.goto(`${suite.stack.url}/dashboard/mandates`);
    await page.getByRole('link', { name: 'Create mandate' }).click();
    await page.getByRole('heading', { level: 1, name: 'Create mandate' }).waitFor();
    await page.getByLabel('Principal id').fill('user_form');
    await page.getByLabel('Delegate id').fill('agent_form');
    await page.getByLabel('Actions (comma-separated)').fill('payments:create, refunds:create');
    await page.getByLabel('Resources (optional, comma-separated)').fill('merchant:acme');
    await page.getByLabel('Amount limit per call (major units)').fill('500');
    await page.getByLabel('Currency', { exact: true }).fill('eur');
    // Typed as UTC (the dashboard's one time zone), to the minute.
    const expires = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 16);
    await page.getByLabel('Expires (optional)').fill(expires);
    await page.getByLabel('Metadata (optional, key=value a line)').fill('order=1234\nchannel=web');
    expect(await allAxeViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Create mandate' }).click();

    const result = page.getByTestId('created-mandate');
    await result.waitFor();
    expect(await page.getByTestId('created-state').textContent()).toBe('ACTIVE');
    expect(await page.getByTestId('created-limit').textContent()).toBe('Up to €500.00 per call');
    expect(await page.getByTestId('created-signature').textContent()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(await page.getByTestId('created-status-slot').textContent()).toMatch(/^index \d+ of /);

    const list = await suite.api()('GET', '/v1/mandates?delegate_id=agent_form', { auth: suite.auth });
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0]).toMatchObject({
      principal: { id: 'user_form', type: 'person' },
      delegate: { id: 'agent_form', type: 'agent' },
      scope: {
        actions: ['payments:create', 'refunds:create'],
        resources: ['merchant:acme'],
        constraints: { max_amount: 50000, currency: 'EUR' },
      },
      expires_at: `${expires}:00.000Z`,
      metadata: { order: '1234', channel: 'web' },
    });
    await closeClean(opened);
  }, 120_000);

  it('when a mandate is revoked from its page, then the dialog asks a reason and the short id, refuses to confirm without them, and the revocation lands with the reason', async () => {
    const created = await suite.api()('POST', '/v1/mandates', {
      auth: suite.auth,
      body: { ...README_MANDATE, delegate: { id: 'agent_revoke_me', type: 'agent' } },
    });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const opened = await openPage(suite.browser);
    const { page } = opened;
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_operator'));
    await page.goto(`${suite.stack.url}/dashboard/mandates/${id}`);
    await page.getByRole('heading', { level: 1, name: `Mandate ${id}` }).waitFor();
    await page.getByRole('button', { name: 'Revoke', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke mandate' });
    await dialog.waitFor();
    const confirm = dialog.getByRole('button', { name: 'Revoke mandate' });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel('Reason').fill('agent retired');
    // The reason alone is not enough: the short id (the id's last 8 characters) must be typed.
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByLabel(/Type the mandate's short id/).fill('wrong123');
    expect(await confirm.isDisabled()).toBe(true);
    expect(await allAxeViolations(page)).toEqual([]);
    await dialog.getByLabel(/Type the mandate's short id/).fill(id.slice(-8));
    await confirm.click();
    await eventually(async () =>
      (await page.getByTestId('mandate-state').textContent()) === 'REVOKED' ? true : undefined,
    );
    const after = await suite.api()('GET', `/v1/mandates/${id}`, { auth: suite.auth });
    expect(after.body.state).toBe('REVOKED');
    const events = await eventually(async () => {
      const res = await suite.api()('GET', `/v1/events?resource_id=${id}&type=MANDATE_REVOKED`, {
        auth: suite.auth,
      });
      return res.body.data.length === 1 ? res.body.data : undefined;
    });
    expect(events[0].data.reason).toBe('agent retired');
    await closeClean(opened);
  }, 120_000);

  it('when an auditor opens an API call in the audit log, then its drawer shows the method, route, status, caller, request id and duration', async () => {
    const opened = await openPage(suite.browser);
    const { page } = opened;
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_auditor'));
    await page.goto(`${suite.stack.url}/dashboard/audit`);
    await page.getByLabel('Event type').selectOption('API_CALL');
    await page.getByLabel('Key id').fill(suite.keyId);
    const row = page.locator('tbody tr').first();
    await row.waitFor();
    // One line an event at 1280 px.
    const heights = await page.$$eval('tbody tr', (rows) =>
      rows.map(
        (r) =>
          (r as unknown as { getBoundingClientRect(): { height: number } }).getBoundingClientRect().height,
      ),
    );
    expect(Math.max(...heights)).toBeLessThan(48);
    // And the table fits its column: it does not scroll sideways inside itself either.
    expect(
      await page.$eval('.table-wrap', (el) => {
        const box = el as unknown as { scrollWidth: number; clientWidth: number };
        return box.scrollWidth - box.clientWidth;
      }),
    ).toBe(0);
    await row.getByRole('button', { name: /^Details of event / }).click();
    const drawer = page.getByTestId('event-detail');
    await drawer.waitFor();
    expect(await drawer.getByTestId('detail-method').textContent()).toMatch(/^(GET|POST|PUT|PATCH|DELETE)$/);
    expect(await drawer.getByTestId('detail-route').textContent()).toMatch(/^\/v1\//);
    expect(await drawer.getByTestId('detail-status').textContent()).toMatch(/^\d{3}$/);
    expect(await drawer.getByTestId('detail-duration').textContent()).toMatch(/^[\d.]+ ms$/);
    await drawer.getByText(suite.keyId).first().waitFor();
    expect(await drawer.getByTestId('detail-request-id').textContent()).not.toBe('—');
    expect(await allAxeViolations(page)).toEqual([]);
    await closeClean(opened);
  }, 120_000);
});
