import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { README_MANDATE, eventually } from '../support/stack';
import { TENANT_AREAS } from '../../packages/dashboard/src/areas';
import {
  SUBJECT,
  allAxeViolations,
  closeClean,
  dashboardForSuite,
  horizontalOverflow,
  laidOut,
  describeIfChromium,
  devSignIn,
  openPage,
} from './browser-support';

/**
 * The product review's findings (issue 43), each a test that failed first: every irreversible
 * action asks for a confirmation stating its impact, and the API key rotation's grace period is
 * chosen there and shown on the key.
 */
/** Whether the element has the focus (evaluated in the page). */
const isFocused = (el: unknown) =>
  el === (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement;

describeIfChromium('dashboard: what the product review found', () => {
  const suite = dashboardForSuite({ tenantName: 'Review Co', roles: ['tenant_viewer', 'tenant_auditor'] });

  async function openAs(role: string, path: string) {
    const tab = await openPage(suite.browser);
    await devSignIn(tab.page, suite.stack.url, suite.tenantId, SUBJECT(role));
    await tab.page.goto(`${suite.stack.url}/dashboard/${path}`);
    return tab;
  }
  const keyStatus = async (keyId: string) =>
    (await suite.api()('GET', `/v1/tenants/${suite.tenantId}/api-keys/${keyId}`, { auth: suite.auth })).body;
  const createKey = async (name: string) => {
    const res = await suite.api()('POST', `/v1/tenants/${suite.tenantId}/api-keys`, {
      auth: suite.auth,
      body: { name, scopes: ['verify'] },
    });
    expect(res.status).toBe(201);
    return res.body as { key_id: string; api_key: string };
  };
  /** Opens the dialog `button` opens, cancels it, and expects nothing changed; then opens it again. */
  async function cancelThenReopen(page: Page, button: string, title: string) {
    await page.getByRole('button', { name: button }).click();
    const dialog = page.getByRole('dialog', { name: title });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: button }).click();
    await dialog.waitFor();
    return dialog;
  }

  it('when an admin revokes a key, then a dialog names it and says it stops working now; Cancel changes nothing, the confirmation revokes it', async () => {
    const key = await createKey('checkout-prod');
    const tab = await openAs('tenant_admin', 'api-keys');
    const { page } = tab;
    const dialog = await cancelThenReopen(page, 'Revoke checkout-prod', 'Revoke key');
    expect((await keyStatus(key.key_id)).status).toBe('active');
    const impact = await dialog.getByTestId('confirm-impact').textContent();
    expect(impact).toContain(`checkout-prod (key_…${key.key_id.slice(-8)}) stops working immediately`);
    expect(impact).toContain('never been used');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await dialog.waitFor({ state: 'detached' });
    await eventually(async () => ((await keyStatus(key.key_id)).status === 'revoked' ? true : undefined));
    await closeClean(tab);
  }, 120_000);

  it('when an admin activates a rotated key, then the dialog offers a grace period (24 h by default) and the old key keeps working, shown on both keys', async () => {
    const old = await createKey('billing-sync');
    const rotated = await suite.api()('POST', `/v1/tenants/${suite.tenantId}/api-keys/${old.key_id}/rotate`, {
      auth: suite.auth,
    });
    expect(rotated.status).toBe(201);
    const tab = await openAs('tenant_admin', 'api-keys');
    const { page } = tab;
    const dialog = await cancelThenReopen(page, 'Activate billing-sync', 'Activate key');
    expect((await keyStatus(rotated.body.key_id)).status).toBe('staging');
    expect(await dialog.getByLabel('Grace period for the old key').inputValue()).toBe('86400');
    expect(await dialog.getByTestId('confirm-impact').textContent()).toMatch(
      new RegExp(`billing-sync \\(key_…${old.key_id.slice(-8)}\\) keeps working until \\d{4}-`),
    );
    await dialog.getByRole('button', { name: 'Activate key' }).click();
    await dialog.waitFor({ state: 'detached' });
    const before = Date.now();
    const oldNow = await eventually(async () => {
      const k = await keyStatus(old.key_id);
      return k.grace_ends_at ? k : undefined;
    });
    expect(oldNow).toMatchObject({ status: 'active', replaced_by_key_id: rotated.body.key_id });
    expect(Math.abs(Date.parse(oldNow.grace_ends_at) - before - 86_400_000)).toBeLessThan(60_000);
    // The old key still authenticates; both rows name the other.
    expect((await suite.api()('GET', '/v1/me', { auth: `${suite.tenantId}:${old.api_key}` })).status).toBe(
      200,
    );
    const links = page.getByTestId('key-links');
    await page.getByText(`replaced by key_…${rotated.body.key_id.slice(-8)}; works until`).waitFor();
    await page.getByText(`replaces key_…${old.key_id.slice(-8)}`).waitFor();
    expect(await links.count()).toBeGreaterThanOrEqual(2);
    await closeClean(tab);
  }, 120_000);

  it('when an admin activates with no grace period, then the dialog says the old key stops now, and it is revoked', async () => {
    const old = await createKey('nightly-export');
    const rotated = await suite.api()('POST', `/v1/tenants/${suite.tenantId}/api-keys/${old.key_id}/rotate`, {
      auth: suite.auth,
    });
    const tab = await openAs('tenant_admin', 'api-keys');
    const { page } = tab;
    await page.getByRole('button', { name: 'Activate nightly-export' }).click();
    const dialog = page.getByRole('dialog', { name: 'Activate key' });
    await dialog.getByLabel('Grace period for the old key').selectOption('0');
    expect(await dialog.getByTestId('confirm-impact').textContent()).toContain(
      `nightly-export (key_…${old.key_id.slice(-8)}) stops working immediately`,
    );
    await dialog.getByRole('button', { name: 'Activate key' }).click();
    await eventually(async () => ((await keyStatus(old.key_id)).status === 'revoked' ? true : undefined));
    expect((await keyStatus(rotated.body.key_id)).status).toBe('active');
    await closeClean(tab);
  }, 120_000);

  it("when an admin revokes a subject's role, then a dialog says who loses what; Cancel keeps it, the confirmation revokes it", async () => {
    const subject = 'dashboard:carol';
    const assigned = await suite.api()('POST', `/v1/tenants/${suite.tenantId}/role-assignments`, {
      auth: suite.auth,
      body: { subject_id: subject, roles: ['tenant_viewer'] },
    });
    expect(assigned.status).toBe(201);
    const status = async () =>
      (
        await suite.api()('GET', `/v1/tenants/${suite.tenantId}/role-assignments/${assigned.body.id}`, {
          auth: suite.auth,
        })
      ).body.status;
    const tab = await openAs('tenant_admin', 'access');
    const { page } = tab;
    const dialog = await cancelThenReopen(page, `Revoke ${subject}`, 'Revoke role');
    expect(await status()).toBe('active');
    expect(await dialog.getByTestId('confirm-impact').textContent()).toContain(
      `${subject} loses tenant_viewer in tenant ${suite.tenantId} immediately`,
    );
    await dialog.getByRole('button', { name: 'Revoke role' }).click();
    await eventually(async () => ((await status()) === 'revoked' ? true : undefined));
    await closeClean(tab);
  }, 120_000);

  it('when an admin chooses a role to assign, then the form says what that role grants in words, before anything is assigned', async () => {
    const tab = await openAs('tenant_admin', 'access');
    const { page } = tab;
    const grants = page.getByTestId('role-grants');
    await page.locator('#assign-role').selectOption('tenant_auditor');
    await eventually(async () =>
      (await grants.textContent())?.includes('read the audit log and export evidence') ? true : undefined,
    );
    expect(await grants.textContent()).toBe(
      "tenant_auditor may: see the tenant's API keys, roles, webhooks and settings; " +
        'read mandates and their budgets; read the audit log and export evidence.',
    );
    await page.locator('#assign-role').selectOption('tenant_viewer');
    await eventually(async () =>
      (await grants.textContent())?.startsWith('tenant_viewer') ? true : undefined,
    );
    expect(await grants.textContent()).not.toContain('audit log');
    await closeClean(tab);
  }, 120_000);

  it('when an admin disables or deletes a webhook endpoint, then each asks first, saying what stops; only the confirmation changes it', async () => {
    const url = 'https://hooks.example.com/review';
    const created = await suite.api()('POST', '/v1/webhook-endpoints', {
      auth: suite.auth,
      body: { url, event_types: ['MANDATE_REVOKED'] },
    });
    expect(created.status).toBe(201);
    const endpoint = async () =>
      suite.api()('GET', `/v1/webhook-endpoints/${created.body.id}`, { auth: suite.auth });
    const tab = await openAs('tenant_admin', 'webhooks');
    const { page } = tab;

    let dialog = await cancelThenReopen(page, `Disable ${url}`, 'Disable endpoint');
    expect((await endpoint()).body.status).toBe('ENABLED');
    expect(await dialog.getByTestId('confirm-impact').textContent()).toContain(
      `${url} stops receiving events immediately`,
    );
    await dialog.getByRole('button', { name: 'Disable endpoint' }).click();
    await eventually(async () => ((await endpoint()).body.status === 'DISABLED' ? true : undefined));

    dialog = await cancelThenReopen(page, `Delete ${url}`, 'Delete endpoint');
    expect((await endpoint()).status).toBe(200);
    expect(await dialog.getByTestId('confirm-impact').textContent()).toContain('cannot be undone');
    await dialog.getByRole('button', { name: 'Delete endpoint' }).click();
    await eventually(async () => ((await endpoint()).status === 404 ? true : undefined));
    await closeClean(tab);
  }, 120_000);

  it('when a confirmation dialog closes, then focus returns to the button that opened it', async () => {
    await createKey('focus-key');
    const tab = await openAs('tenant_admin', 'api-keys');
    const { page } = tab;
    const opener = page.getByRole('button', { name: 'Revoke focus-key' });
    await opener.click();
    const dialog = page.getByRole('dialog', { name: 'Revoke key' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    await eventually(async () => ((await opener.evaluate(isFocused)) ? true : undefined));
    expect(await opener.evaluate(isFocused)).toBe(true);
    await closeClean(tab);
  }, 120_000);

  it("when the audit log's event drawer closes, then focus returns to the event's details button", async () => {
    const tab = await openAs('tenant_admin', 'audit');
    const { page } = tab;
    const opener = page.getByRole('button', { name: /^Details of event / }).first();
    await opener.click();
    const drawer = page.getByRole('dialog');
    await drawer.waitFor();
    await page.keyboard.press('Escape');
    await drawer.waitFor({ state: 'detached' });
    await eventually(async () => ((await opener.evaluate(isFocused)) ? true : undefined));
    expect(await opener.evaluate(isFocused)).toBe(true);
    await closeClean(tab);
  }, 120_000);

  it('when every area is opened with the CSP enforced, and its dialogs and panels opened, then the console shows no CSP error', async () => {
    // A tab that does not bypass the CSP (openPage's does, for axe): what an admin's browser sees.
    const context = await suite.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`${page.url()}: ${e.message}`));
    await createKey('csp-key');
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_admin'));
    for (const area of TENANT_AREAS) {
      await page.goto(`${suite.stack.url}/dashboard${area.path}`);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
    }
    // A dialog (a key's revocation) and a panel (an audit event's drawer), each opened and closed.
    await page.goto(`${suite.stack.url}/dashboard/api-keys`);
    await page.getByRole('button', { name: 'Revoke csp-key' }).click();
    await page.getByRole('dialog', { name: 'Revoke key' }).getByRole('button', { name: 'Cancel' }).click();
    await page.goto(`${suite.stack.url}/dashboard/audit`);
    await page
      .getByRole('button', { name: /^Details of event / })
      .first()
      .click();
    await page.getByRole('dialog').waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    expect(errors).toEqual([]);
    await context.close();
  }, 180_000);

  /** A 91-character delegate id, as the review's seeded data had. */
  const LONG_DELEGATE = `agent_${'x'.repeat(40)}_${'y'.repeat(44)}`;

  it('when a mandate has a 91-character delegate id, then at 1280 px the list stays a table, the id cut in its cell with the whole id on hover and copy, and the names shown beside the ids', async () => {
    expect(LONG_DELEGATE).toHaveLength(91);
    const created = await suite.api()('POST', '/v1/mandates', {
      auth: suite.auth,
      body: {
        ...README_MANDATE,
        principal: { ...README_MANDATE.principal, name: 'Acme Travel' },
        delegate: { id: LONG_DELEGATE, type: 'agent', name: 'Booking agent' },
      },
    });
    expect(created.status).toBe(201);
    const tab = await openAs('tenant_admin', 'mandates');
    const { page } = tab;
    const row = page.locator(`tr[data-mandate="${created.body.id}"]`);
    await row.waitFor();
    await laidOut(page);
    expect(await page.locator('.table-wrap').first().getAttribute('data-layout')).toBe('table');
    expect(await horizontalOverflow(page)).toBe(0);
    const cut = row.locator(`code[title="${LONG_DELEGATE}"]`);
    expect(
      await cut.evaluate(
        (el) =>
          (el as unknown as { scrollWidth: number; clientWidth: number }).scrollWidth >
          (el as unknown as { clientWidth: number }).clientWidth,
      ),
    ).toBe(true);
    expect(await row.getByRole('button', { name: `Copy ${LONG_DELEGATE}` }).count()).toBe(1);
    expect(await row.getByText('Booking agent').count()).toBe(1);
    expect(await row.getByText('Acme Travel').count()).toBe(1);
    await closeClean(tab);
  }, 120_000);

  it('when a mandate with a long id is opened at 390 px, then its title wraps and the page does not scroll sideways', async () => {
    const created = await suite.api()('POST', '/v1/mandates', { auth: suite.auth, body: README_MANDATE });
    const tab = await openAs('tenant_admin', `mandates/${created.body.id}`);
    const { page } = tab;
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('heading', { level: 1, name: `Mandate ${created.body.id}` }).waitFor();
    await laidOut(page);
    expect(await horizontalOverflow(page)).toBe(0);
    await closeClean(tab);
  }, 120_000);

  it('when a mandate starts in 3 days, then its badge says "Starts in 3 days", not ACTIVE, in the list and on its page', async () => {
    const validFrom = new Date(Date.now() + 3 * 86_400_000 + 3_600_000).toISOString();
    const created = await suite.api()('POST', '/v1/mandates', {
      auth: suite.auth,
      body: {
        ...README_MANDATE,
        delegate: { id: 'agent_later', type: 'agent' },
        valid_from: validFrom,
        expires_at: new Date(Date.now() + 30 * 86_400_000).toISOString(),
      },
    });
    expect(created.status).toBe(201);
    const tab = await openAs('tenant_admin', 'mandates');
    const { page } = tab;
    const row = page.locator(`tr[data-mandate="${created.body.id}"]`);
    await row.waitFor();
    expect(await row.locator('.mantine-Badge-root').textContent()).toBe('Starts in 3 days');
    await page.goto(`${suite.stack.url}/dashboard/mandates/${created.body.id}`);
    await page.getByTestId('mandate-state').waitFor();
    expect(await page.getByTestId('mandate-state').textContent()).toBe('Starts in 3 days');
    await closeClean(tab);
  }, 120_000);

  it('when a mandate is not found, then the page has its level-one heading and no axe violation', async () => {
    const tab = await openPage(suite.browser, (url) => !url.includes('mdt_'));
    const { page } = tab;
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_admin'));
    await page.goto(`${suite.stack.url}/dashboard/mandates/mdt_00000000000000000000000000`);
    await page.getByRole('heading', { level: 1, name: 'Mandate not found' }).waitFor();
    expect(await allAxeViolations(page)).toEqual([]);
    await closeClean(tab);
  }, 120_000);

  it('when the mandates list fails to load, then the error is shown alone, without the empty state', async () => {
    const tab = await openPage(suite.browser, (url) => !url.includes('/mandates'));
    const { page } = tab;
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_admin'));
    await page.goto(`${suite.stack.url}/dashboard/mandates`);
    // A filter nothing matches: the empty state. Then the API fails, and the same filter is asked again.
    await page.getByLabel('Delegate id').fill('agent_nobody');
    await page.getByText('No mandates.').waitFor();
    await page.route('**/v1/mandates?**', (route) =>
      route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({ error: 'SERVICE_UNAVAILABLE', message: 'mandates is down' }),
      }),
    );
    await page.getByLabel('Delegate id').fill('');
    await page.getByLabel('Delegate id').fill('agent_nobody');
    await page.getByText('mandates is down').waitFor({ timeout: 30_000 });
    expect(await page.getByText('No mandates.').count()).toBe(0);
    expect(await page.getByTestId('mandates').count()).toBe(0);
    await closeClean(tab);
  }, 120_000);

  it('when two filters change before the page renders again, then the URL keeps both', async () => {
    const tab = await openAs('tenant_admin', 'mandates');
    const { page } = tab;
    await page.getByLabel('Delegate id').waitFor();
    // One task, no render between: a navigation is a transition, so a loaded machine does the same.
    await page.evaluate(() => {
      const g = globalThis as any;
      const input = g.document.querySelector('#delegate-filter');
      Object.getOwnPropertyDescriptor(g.HTMLInputElement.prototype, 'value')!.set!.call(input, 'agent_both');
      input.dispatchEvent(new g.Event('input', { bubbles: true }));
      const select = g.document.querySelector('#state-filter');
      Object.getOwnPropertyDescriptor(g.HTMLSelectElement.prototype, 'value')!.set!.call(select, 'SUSPENDED');
      select.dispatchEvent(new g.Event('change', { bubbles: true }));
    });
    await eventually(async () => (new URL(page.url()).searchParams.get('state') ? true : undefined));
    expect(Object.fromEntries(new URL(page.url()).searchParams)).toMatchObject({
      delegate_id: 'agent_both',
      state: 'SUSPENDED',
    });
    await closeClean(tab);
  }, 120_000);

  it('when the mandates list is filtered, then the filters are in the URL and survive a reload and Back from a mandate', async () => {
    const created = await suite.api()('POST', '/v1/mandates', {
      auth: suite.auth,
      body: { ...README_MANDATE, delegate: { id: 'agent_filtered', type: 'agent' } },
    });
    expect(created.status).toBe(201);
    const tab = await openAs('tenant_admin', 'mandates');
    const { page } = tab;
    await page.getByLabel('Delegate id').fill('agent_filtered');
    await page.getByLabel('State').selectOption('ACTIVE');
    const row = page.locator(`tr[data-mandate="${created.body.id}"]`);
    await row.waitFor();
    await eventually(async () => (page.url().includes('delegate_id=agent_filtered') ? true : undefined));
    expect(new URL(page.url()).searchParams.get('state')).toBe('ACTIVE');

    await page.reload();
    await row.waitFor();
    expect(await page.getByLabel('Delegate id').inputValue()).toBe('agent_filtered');
    expect(await page.getByLabel('State').inputValue()).toBe('ACTIVE');
    expect(await page.locator('tr[data-mandate]').count()).toBe(1);

    await row.getByRole('link').first().click();
    await page.getByRole('heading', { level: 1, name: `Mandate ${created.body.id}` }).waitFor();
    await page.goBack();
    await row.waitFor();
    expect(await page.getByLabel('Delegate id').inputValue()).toBe('agent_filtered');
    await closeClean(tab);
  }, 120_000);

  it('when an admin clicks "Verify this mandate", then the playground opens with its request filled, and with an amount Verify answers ALLOW; a viewer, who may not verify, has no such link', async () => {
    const created = await suite.api()('POST', '/v1/mandates', {
      auth: suite.auth,
      body: {
        ...README_MANDATE,
        delegate: { id: 'agent_shortcut', type: 'agent' },
        scope: { actions: ['payments:create'], constraints: { max_amount: 50_000, currency: 'EUR' } },
      },
    });
    expect(created.status).toBe(201);
    const tab = await openAs('tenant_admin', `mandates/${created.body.id}`);
    const { page } = tab;
    await page.getByTestId('verify-this-mandate').click();
    await page.getByRole('heading', { level: 1, name: 'Verification playground' }).waitFor();
    const filled = {
      mandate: await page.locator('#v-mandate').inputValue(),
      action: await page.locator('#v-action').inputValue(),
      delegate: await page.locator('#v-delegate').inputValue(),
    };
    expect(filled).toEqual({
      mandate: created.body.id,
      action: 'payments:create',
      delegate: 'agent_shortcut',
    });
    // The amount is the user's to give (the mandate has a limit, so verify needs one).
    expect(await page.locator('#v-currency').inputValue()).toBe('EUR');
    await page.locator('#v-amount').fill('1200');
    await page.getByRole('button', { name: 'Verify', exact: true }).click();
    await page.getByTestId('decision').waitFor();
    expect([
      await page.getByTestId('decision').textContent(),
      await page.getByTestId('reason').textContent(),
    ]).toEqual(['ALLOW', 'OK']);
    await closeClean(tab);

    const viewer = await openAs('tenant_viewer', `mandates/${created.body.id}`);
    await viewer.page.getByTestId('mandate-state').waitFor();
    expect(await viewer.page.getByTestId('verify-this-mandate').count()).toBe(0);
    await closeClean(viewer);
  }, 120_000);

  it('when a signed-in page is opened and Tab pressed, then the first stop is "Skip to content", and Enter moves focus to the page', async () => {
    const tab = await openAs('tenant_admin', 'mandates');
    const { page } = tab;
    await page.getByRole('heading', { level: 1, name: 'Mandates' }).waitFor();
    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to content' });
    expect(await skip.evaluate(isFocused)).toBe(true);
    expect(await skip.isVisible()).toBe(true);
    await page.keyboard.press('Enter');
    expect(await page.locator('#main').evaluate(isFocused)).toBe(true);
    await closeClean(tab);
  }, 120_000);

  it('when a list takes a while, then grey lines hold its place (with "Loading…" for screen readers) until it comes', async () => {
    expect(
      (await suite.api()('POST', '/v1/mandates', { auth: suite.auth, body: README_MANDATE })).status,
    ).toBe(201);
    const tab = await openAs('tenant_admin', 'api-keys');
    const { page } = tab;
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    await page.route('**/v1/mandates?*', async (route) => {
      await held;
      await route.continue();
    });
    await page.getByRole('link', { name: 'Mandates', exact: true }).click();
    const loading = page.getByTestId('loading');
    await loading.waitFor();
    const shown = {
      lines: await loading.locator('.mantine-Skeleton-root').count(),
      said: await page.getByRole('status').filter({ hasText: 'Loading…' }).count(),
    };
    release();
    await page.locator('tr[data-mandate]').first().waitFor();
    expect({ ...shown, after: await page.getByTestId('loading').count() }).toEqual({
      lines: 3,
      said: 1,
      after: 0,
    });
    await closeClean(tab);
  }, 120_000);

  it('when an admin exports the filtered mandates as CSV, then the file holds exactly the mandates the filter selects, every page of them, one row each', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 105; i++) {
      const body = { ...README_MANDATE, delegate: { id: `agent_csv_${i}`, type: 'agent' } };
      let created = await suite.api()('POST', '/v1/mandates', { auth: suite.auth, body });
      // The plan's create rate: wait as the API says, then create it.
      while (created.status === 429) {
        await new Promise((r) => setTimeout(r, Number(created.headers.get('retry-after') ?? 1) * 1000));
        created = await suite.api()('POST', '/v1/mandates', { auth: suite.auth, body });
      }
      expect(created.status).toBe(201);
      ids.push(created.body.id);
    }
    // 105 match: more than one page of the export's 100 (and of the list's 20); the suite's other mandates do not.
    const tab = await openAs('tenant_admin', 'mandates?q=AGENT_CSV_');
    const { page } = tab;
    await page.locator('tr[data-mandate]').first().waitFor();
    const [file] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    expect(file.suggestedFilename()).toBe('mandates.csv');
    const text = await readFile((await file.path())!, 'utf8');
    const [header, ...rows] = text.trimEnd().split('\r\n');
    const columns = header!.split(',');
    expect(columns).toEqual(
      expect.arrayContaining(['id', 'state', 'principal.id', 'delegate.id', 'scope.actions']),
    );
    const idAt = columns.indexOf('id');
    expect(rows.map((r) => r.split(',')[idAt]).sort()).toEqual([...ids].sort());
    await page.getByTestId('csv-exported').waitFor();
    expect(await page.getByTestId('csv-exported').textContent()).toBe('105 rows exported');
    await closeClean(tab);
  }, 120_000);
});
