import type { Page } from 'playwright-core';
import {
  SUBJECT,
  closeClean,
  dashboardForSuite,
  expectAccessible,
  describeIfChromium,
  devSignIn,
  openPage,
  operatorSignIn,
  sessionToken,
} from './browser-support';

/**
 * Drift monitoring, the wallet sessions of Trust operations and the operator's tenant list in a
 * real browser against `npm start`'s in-process stack (with a wallet verifier, so sessions start).
 */
describeIfChromium('dashboard in a real browser: drift monitoring, wallet sessions, tenants', () => {
  const dashboard = dashboardForSuite({
    tenantName: 'Drift Co',
    roles: ['tenant_viewer', 'tenant_auditor'],
    env: {
      // A verifier, so wallet sessions start (no wallet answers them here).
      WALLET_PUBLIC_URL: 'http://127.0.0.1:8080',
      WALLET_SUBJECT_SECRET: 'drift-browser-test-subject-secret-32-chars',
    },
  });
  const { api } = dashboard;
  /** A route of the tenant's own (its id in the path). */
  const tenantRoute = (route: string) => `/v1/tenants/${dashboard.tenantId}${route}`;

  const asSubject = (token: string) => ({ auth: token, headers: { 'x-tenant-id': dashboard.tenantId } });

  async function openAs(role: string, area: string) {
    const opened = await openPage(dashboard.browser);
    await devSignIn(opened.page, dashboard.stack.url, dashboard.tenantId, SUBJECT(role));
    await opened.page.goto(`${dashboard.stack.url}/dashboard/${area}`);
    await opened.page.getByRole('heading', { level: 1 }).first().waitFor();
    return opened;
  }

  /** Reloads the page until `ready` holds: the audit trail fills in once the broker delivered. */
  async function reloadUntil(page: Page, ready: () => Promise<boolean>, timeoutMs = 20_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Drift monitoring' }).waitFor();
      await page.waitForLoadState('networkidle');
      if (await ready()) return;
      if (Date.now() > deadline) throw new Error('the drift page never showed the expected changes');
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  it('when an admin saves a baseline, then creates a key and revokes a role assignment, then Drift shows both changes against the baseline and in the audit trail', async () => {
    const temp = await api()('POST', tenantRoute('/role-assignments'), {
      auth: dashboard.auth,
      body: { subject_id: 'dashboard:drift-temp', roles: ['tenant_viewer'] },
    });
    expect(temp.status).toBe(201);

    const { page, errors } = await openAs('tenant_admin', 'drift');
    await page.getByRole('heading', { level: 1, name: 'Drift monitoring' }).waitFor();
    await page.getByTestId('baseline-none').waitFor();
    await page.getByRole('button', { name: 'Save baseline' }).click();
    const saved = page.getByTestId('baseline-saved');
    await saved.waitFor();
    expect(await saved.textContent()).toContain(`by ${SUBJECT('tenant_admin')}`);
    await page.getByTestId('no-differences').waitFor();

    const token = await page.evaluate(sessionToken);
    const key = await api()('POST', tenantRoute('/api-keys'), {
      ...asSubject(token),
      body: { name: 'drift-ci', scopes: ['verify'] },
    });
    expect(key.status).toBe(201);
    const revoke = await api()('POST', tenantRoute(`/role-assignments/${temp.body.id}/revoke`), {
      ...asSubject(token),
      body: {},
    });
    expect(revoke.status).toBe(200);

    const keyRow = page.locator('tr[data-kind="API key"][data-change="added"]', { hasText: 'drift-ci' });
    const roleRow = page.locator('tr[data-kind="Role assignment"][data-change="changed"]', {
      hasText: 'dashboard:drift-temp',
    });
    const trail = page.getByTestId('trail');
    await reloadUntil(
      page,
      async () =>
        (await keyRow.count()) === 1 &&
        (await roleRow.count()) === 1 &&
        (await trail.locator('tr[data-type="API_KEY_CREATED"]').count()) === 1 &&
        (await trail.locator('tr[data-type="TENANT_ROLE_REVOKED"]').count()) === 1,
    );
    expect(await keyRow.textContent()).toContain('verify');
    expect(await roleRow.textContent()).toContain('status active → revoked');
    // The trail names who made each change: the admin, signed in.
    expect(await trail.locator('tr[data-type="API_KEY_CREATED"]').textContent()).toContain(
      SUBJECT('tenant_admin'),
    );
    await expectAccessible(page, 'drift');
    await closeClean({ page, errors });
  }, 120_000);

  it('when a viewer opens Drift, then it sees the baseline and the comparison, the save button is disabled, the audit trail is explained, and the API answers 403 on PUT', async () => {
    // This test's own baseline, saved with the tenant's key (the admin's test may not have run).
    expect((await api()('PUT', tenantRoute('/access-baseline'), { auth: dashboard.auth })).status).toBe(200);
    const before = (await api()('GET', tenantRoute('/access-baseline'), { auth: dashboard.auth })).body;

    const { page, errors } = await openAs('tenant_viewer', 'drift');
    await page.getByRole('heading', { level: 1, name: 'Drift monitoring' }).waitFor();
    await page.getByTestId('baseline-saved').waitFor();
    expect(await page.getByRole('button', { name: 'Save baseline' }).isDisabled()).toBe(true);
    await page.getByText('Saving a baseline needs the tenant:write permission').waitFor();
    // Without events:read the page never asks the audit trail; it says why and compares instead.
    await page.getByTestId('trail-unavailable').waitFor();
    await page.getByRole('heading', { name: 'Current configuration against the baseline' }).waitFor();
    await page.waitForLoadState('networkidle');
    await expectAccessible(page, 'tenant_viewer-drift');

    const token = await page.evaluate(sessionToken);
    const put = await api()('PUT', tenantRoute('/access-baseline'), asSubject(token));
    expect(put.status).toBe(403);
    expect(put.body).toMatchObject({ error: 'FORBIDDEN', message: expect.any(String) });
    expect((await api()('GET', tenantRoute('/access-baseline'), { auth: dashboard.auth })).body).toEqual(
      before,
    );
    await closeClean({ page, errors });
  }, 120_000);

  it('when a wallet verification session is started, then Trust operations lists it (state, purpose) without its claims, and the status filter applies', async () => {
    const started = await api()('POST', '/v1/identity-verifications', {
      auth: dashboard.auth,
      body: { purpose: 'mandate' },
    });
    expect(started.status).toBe(201);
    const { page, errors } = await openAs('tenant_auditor', 'trust');
    await page.getByRole('heading', { level: 1, name: 'Trust operations' }).waitFor();
    const row = page.locator(`tr[data-session="${started.body.id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('pending');
    expect(await row.textContent()).toContain('mandate');
    await page.getByLabel('Status').selectOption('VERIFIED');
    await row.waitFor({ state: 'detached' });
    await page.getByLabel('Status').selectOption('PENDING');
    await row.waitFor();
    await page.waitForLoadState('networkidle');
    await expectAccessible(page, 'tenant_auditor-trust-sessions');
    await closeClean({ page, errors });
  }, 120_000);

  it('when the operator opens the console, then the tenant list shows this tenant, and a tenant created there appears in it', async () => {
    const { page, errors } = await openPage(dashboard.browser);
    await operatorSignIn(page, dashboard.stack.url, dashboard.stack.operatorToken);
    await page.getByRole('heading', { level: 1, name: 'Operator console' }).waitFor();
    const row = page.locator(`tr[data-tenant="${dashboard.tenantId}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('Drift Co');
    expect(await row.textContent()).toContain('enterprise');

    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Listed at once');
    await page.getByRole('button', { name: 'Create tenant' }).click();
    const created = (await page.getByTestId('created-tenant').textContent())!;
    await page.locator(`tr[data-tenant="${created}"]`, { hasText: 'Listed at once' }).waitFor();
    await page.waitForLoadState('networkidle');
    await expectAccessible(page, 'operator-tenants');
    await closeClean({ page, errors });
  }, 120_000);
});
