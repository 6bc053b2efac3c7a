import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { EmbeddedStack } from '../../scripts/embedded';
import { apiClient, eventually, README_MANDATE } from '../support/stack';
import {
  ARTIFACTS,
  closeClean,
  ROLE_AREAS,
  SUBJECT,
  type AreaId,
  axeViolations,
  expectAccessible,
  describeIfChromium,
  devSignIn,
  navAreas,
  openPage,
  operatorSignIn,
  sessionToken,
  startDashboardStack,
} from './browser-support';

/**
 * The dashboard in a real browser (Debian's chromium, driven by playwright-core) against `npm
 * start`'s in-process stack: for each tenant role and the operator, exactly the navigation its
 * permissions allow, "No access" on a forbidden area's URL while the API answers 403, no console
 * error, no serious or critical axe-core violation, and a screenshot of every area it opens.
 */
const AREA_PATHS: Record<AreaId, string> = {
  'api-keys': '/api-keys',
  mandates: '/mandates',
  verify: '/verify',
  audit: '/audit',
  access: '/access',
  widget: '/widget',
  billing: '/billing',
  governance: '/governance',
  drift: '/drift',
  trust: '/trust',
  webhooks: '/webhooks',
  operator: '/operator',
};
/** The browser-side global the widget preview's test reads (the repository's tsconfig has no DOM library). */
type BrowserGlobals = { getComputedStyle(el: unknown): { backgroundColor: string; color: string } };
/** A signed-in tab: its page, the errors it recorded, and the session's bearer token for API calls. */
type SignedIn = { page: Page; errors: string[]; token: string };

describeIfChromium('dashboard in a real browser', () => {
  let stack: EmbeddedStack;
  let browser: Browser;
  let tenantId: string;
  let mandateId: string;
  let firstKey: { keyId: string; auth: string };
  const api = () => apiClient(stack.url);
  /** A JWT caller on a tenant route: its bearer token, and the tenant it names (X-Tenant-Id). */
  const asSubject = (token: string) => ({ auth: token, headers: { 'x-tenant-id': tenantId } });

  beforeAll(async () => {
    let auth: string;
    let keyId: string;
    ({ stack, browser, tenantId, auth, keyId } = await startDashboardStack({
      tenantName: 'Browser Co',
      roles: ['tenant_operator', 'tenant_viewer', 'tenant_auditor'],
    }));
    firstKey = { keyId, auth };
    const mandate = await api()('POST', '/v1/mandates', {
      auth,
      body: README_MANDATE,
    });
    expect(mandate.status).toBe(201);
    mandateId = mandate.body.id;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  /** A page signed in as `role`'s subject, opened at the dashboard's `area`. */
  async function openAs(role: string, area: string): Promise<SignedIn> {
    const opened = await signedInAs(role);
    await opened.page.goto(`${stack.url}/dashboard/${area}`);
    return opened;
  }

  /** A fresh tab signed in (development sign-in) as `role`'s subject, and the session's bearer token. */
  async function signedInAs(role: string): Promise<SignedIn> {
    const opened = await openPage(browser);
    await devSignIn(opened.page, stack.url, tenantId, SUBJECT(role));
    return { ...opened, token: await opened.page.evaluate(sessionToken) };
  }

  /** Opens an area by its URL, waits for its heading, checks axe, saves a screenshot. */
  async function visit(page: Page, who: string, area: AreaId, heading: string) {
    await page.goto(`${stack.url}/dashboard${AREA_PATHS[area]}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    await page.waitForLoadState('networkidle');
    expect({ who, area, violations: await axeViolations(page) }).toEqual({ who, area, violations: [] });
    await page.screenshot({ path: path.join(ARTIFACTS, `${who}-${area}.png`), fullPage: true });
  }

  /** What the API answers this caller on the area's main read. */
  async function apiStatus(area: AreaId, token: string, asOperator = false): Promise<number> {
    const headers: Record<string, string> = asOperator ? {} : { 'x-tenant-id': tenantId };
    const paths: Record<AreaId, string> = {
      'api-keys': `/v1/tenants/${tenantId}/api-keys`,
      mandates: '/v1/mandates',
      verify: '/v1/verify',
      audit: '/v1/events',
      access: `/v1/tenants/${tenantId}/role-assignments`,
      widget: `/v1/tenants/${tenantId}/widget-config`,
      billing: '/v1/usage',
      governance: `/v1/tenants/${tenantId}/role-assignments?status=active`,
      drift: `/v1/tenants/${tenantId}/access-baseline`,
      // Trust operations reads the public JWKS (and mandates with mandates:read); its permission,
      // tenant:read, is asked of the API on a tenant:read route.
      trust: `/v1/tenants/${tenantId}/widget-config`,
      webhooks: '/v1/webhook-endpoints',
      operator: '/v1/platform/onboarding-requests',
    };
    // The playground's call is a POST; every other area's main read a GET.
    const body = area === 'verify' ? { mandate_id: mandateId, action: 'payments:create' } : undefined;
    return (await api()(area === 'verify' ? 'POST' : 'GET', paths[area], { auth: token, headers, body }))
      .status;
  }

  const HEADINGS: Record<AreaId, string> = {
    'api-keys': 'API keys',
    mandates: 'Mandates',
    verify: 'Verification playground',
    audit: 'Audit log',
    access: 'Access management',
    widget: 'Widget configuration',
    billing: 'Billing',
    governance: 'Governance',
    drift: 'Drift monitoring',
    trust: 'Trust operations',
    webhooks: 'Webhooks',
    operator: 'Operator console',
  };

  it.each(Object.keys(ROLE_AREAS))(
    'when %s signs in (development sign-in), then the navigation shows exactly its areas, each opens cleanly, and the others say "No access" while the API answers 403',
    async (role) => {
      const { page, errors, token } = await signedInAs(role);
      await page.getByText('Development sign-in').first().waitFor();
      expect(await navAreas(page)).toEqual(ROLE_AREAS[role]);
      for (const area of ROLE_AREAS[role]!) await visit(page, role, area, HEADINGS[area]);

      const forbidden = (Object.keys(AREA_PATHS) as AreaId[]).filter((a) => !ROLE_AREAS[role]!.includes(a));
      for (const area of forbidden) {
        await page.goto(`${stack.url}/dashboard${AREA_PATHS[area]}`);
        await page.getByRole('heading', { level: 1, name: 'No access' }).waitFor();
        // The platform surface does not know tenant subjects at all (401); a tenant area is a 403.
        expect({ area, status: await apiStatus(area, token) }).toEqual({
          area,
          status: area === 'operator' ? 401 : 403,
        });
      }
      await page.screenshot({ path: path.join(ARTIFACTS, `${role}-no-access.png`) });
      await closeClean({ page, errors });
    },
    120_000,
  );

  it('when the operator signs in with the operator token, then only the operator console shows, it creates a tenant with its key shown once, and tenant areas say "No access"', async () => {
    for (const organization_name of ['Globex', 'Initech']) {
      const res = await api()('POST', '/v1/onboarding/request', {
        body: { organization_name, contact_email: `ops@${organization_name.toLowerCase()}.example.com` },
      });
      expect(res.status).toBe(202);
    }
    const { page, errors } = await openPage(browser);
    await page.goto(`${stack.url}/dashboard/sign-in`);
    await page.getByRole('heading', { name: 'Development sign-in' }).waitFor();
    await expectAccessible(page, 'sign-in');
    await operatorSignIn(page, stack.url, stack.operatorToken);
    expect(await navAreas(page)).toEqual(['operator']);
    await visit(page, 'operator', 'operator', 'Operator console');

    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Made in the browser');
    await page.getByRole('button', { name: 'Create tenant' }).click();
    await expect(page.getByTestId('secret').textContent()).resolves.toMatch(/^msk_/);
    expect(await page.getByTestId('created-tenant').textContent()).toMatch(/^tnt_/);

    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByRole('button', { name: 'Approve Globex' }).click();
    expect(await page.getByTestId('approved-tenant').textContent()).toMatch(/^tnt_/);
    await expect(page.getByTestId('secret').textContent()).resolves.toMatch(/^msk_/);
    await page.getByLabel('Rejection reason for Initech').fill('duplicate');
    await page.getByRole('button', { name: 'Reject Initech' }).click();
    await page.getByRole('cell', { name: 'Initech', exact: true }).waitFor({ state: 'detached' });
    await page.getByLabel('Status').selectOption('REJECTED');
    await page.getByRole('cell', { name: 'rejected: duplicate' }).waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'operator-onboarding.png'), fullPage: true });

    for (const area of (Object.keys(AREA_PATHS) as AreaId[]).filter((a) => a !== 'operator')) {
      await page.goto(`${stack.url}/dashboard${AREA_PATHS[area]}`);
      await page.getByRole('heading', { level: 1, name: 'No access' }).waitFor();
      // The operator token is refused on tenant routes (it opens /v1/platform/* only).
      expect([401, 403]).toContain(await apiStatus(area, stack.operatorToken, true));
    }
    await closeClean({ page, errors });
  }, 120_000);

  it('when a token claims the development issuer but another key signed it, then the API refuses it (401)', async () => {
    const { SignJWT, generateKeyPair } = await import('jose');
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuer('urn:mandate:embedded-dev-sign-in')
      .setAudience('mandate-dashboard')
      .setSubject(SUBJECT('tenant_admin'))
      .setExpirationTime('10m')
      .sign(privateKey);
    const res = await api()('GET', '/v1/me', asSubject(forged));
    expect(res.status).toBe(401);
    const config = await api()('GET', '/dashboard/config.json');
    expect(config.body).toEqual({ devSignIn: true });
  });

  it('when an admin creates an API key, then its secret is shown once with a copy button and a warning, and after a reload it is gone', async () => {
    const { page, errors } = await openAs('tenant_admin', 'api-keys');
    await page.getByLabel('Name').fill('browser key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByTestId('secret').textContent();
    expect(secret).toMatch(/^msk_/);
    await page.getByRole('button', { name: 'Copy secret' }).waitFor();
    await page.getByText('Shown only once.').waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'tenant_admin-api-keys-secret.png') });
    await page.getByRole('cell', { name: 'browser key', exact: true }).waitFor();

    await page.reload();
    await page.getByRole('cell', { name: 'browser key', exact: true }).waitFor();
    expect(await page.getByTestId('secret').count()).toBe(0);
    expect(await page.content()).not.toContain(secret!);
    await closeClean({ page, errors });
  }, 120_000);

  it('when an admin rotates a key, then the new secret is shown once and the new key waits in staging; activating it (no grace period, confirmed) revokes the old one; revoking it (confirmed) leaves none active', async () => {
    const { page, errors } = await openAs('tenant_admin', 'api-keys');
    await page.getByLabel('Name').fill('rotating key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const first = await page.getByTestId('secret').textContent();
    const statuses = async () =>
      (
        await page.$$eval('tbody tr', (rows) =>
          rows
            .map((r) => [...r.querySelectorAll('td')])
            .filter((cells) => cells[0]!.textContent === 'rotating key')
            // The status's badge (the rotation's links are written under it).
            .map((cells) => cells[3]!.querySelector('.mantine-Badge-root')?.textContent ?? ''),
        )
      ).sort();
    const until = (want: string[]) =>
      eventually(async () => (JSON.stringify(await statuses()) === JSON.stringify(want) ? true : undefined));
    await until(['active']);

    await page.getByRole('button', { name: 'Rotate rotating key' }).click();
    const second = await eventually(async () => {
      const shown = await page.getByTestId('secret').textContent();
      return shown && shown !== first ? shown : undefined;
    });
    expect(second).toMatch(/^msk_/);
    await until(['active', 'staging']);

    // Each asks first (dashboard-review.test.ts); activating without a grace period revokes the old key now.
    await page.getByRole('button', { name: 'Activate rotating key' }).click();
    const activate = page.getByRole('dialog', { name: 'Activate key' });
    await activate.getByLabel('Grace period for the old key').selectOption('0');
    await activate.getByRole('button', { name: 'Activate key' }).click();
    await until(['active', 'revoked']);
    await page.getByRole('button', { name: 'Revoke rotating key' }).click();
    await page
      .getByRole('dialog', { name: 'Revoke key' })
      .getByRole('button', { name: 'Revoke key' })
      .click();
    await until(['revoked', 'revoked']);
    expect(await page.getByRole('button', { name: /rotating key/ }).count()).toBe(0);
    await closeClean({ page, errors });
  }, 120_000);

  it('when an operator-role subject opens a mandate and takes it through suspend, reactivate and revoke with reasons, then it sees the status list and index, each state shows, a revoked mandate offers no action, and the timeline lists the three events', async () => {
    const created = await api()('POST', '/v1/mandates', {
      auth: firstKey.auth,
      body: { ...README_MANDATE, delegate: { id: 'agent_lifecycle', type: 'agent' } },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const { page, errors } = await openAs('tenant_operator', `mandates/${id}`);
    await page.getByRole('heading', { level: 1, name: `Mandate ${id}` }).waitFor();
    // The detail names the mandate's status list, linked, and its index there (docs/DECISIONS.md, "Status lists (v3)").
    const { uri, idx } = created.body.status.status_list as { uri: string; idx: number };
    const listEntry = page.locator('dt:text-is("Status list") + dd');
    expect(await listEntry.textContent()).toBe(`${uri.split('/').pop()}, index ${idx}`);
    expect(await listEntry.getByRole('link').getAttribute('href')).toBe(uri);
    for (const [button, reason, state] of [
      ['Suspend', 'travel paused', 'SUSPENDED'],
      ['Reactivate', 'travel resumed', 'ACTIVE'],
      ['Revoke', 'agent retired', 'REVOKED'],
    ] as const) {
      // Each change asks its reason in a dialog; revoking also asks the mandate's short id.
      await page.getByRole('button', { name: button, exact: true }).click();
      const dialog = page.getByRole('dialog', { name: `${button} mandate` });
      await dialog.getByLabel('Reason').fill(reason);
      if (button === 'Revoke') await dialog.getByLabel(/short id/).fill(id.slice(-8));
      await dialog.getByRole('button', { name: `${button} mandate` }).click();
      await eventually(async () =>
        (await page.getByTestId('mandate-state').textContent()) === state ? true : undefined,
      );
    }
    expect(await page.getByRole('heading', { name: 'Change state' }).count()).toBe(0);
    for (const type of ['MANDATE_SUSPENDED', 'MANDATE_REACTIVATED', 'MANDATE_REVOKED'])
      await page.getByText(type).first().waitFor({ timeout: 15_000 });
    await closeClean({ page, errors });
  }, 120_000);

  it("when an admin opens access management, then its own assignment's controls are disabled (and the API refuses with 409)", async () => {
    const { page, errors, token } = await openAs('tenant_admin', 'access');
    const own = page.locator(`tr[data-subject="${SUBJECT('tenant_admin')}"]`);
    await own.getByRole('button', { name: /Revoke/ }).waitFor();
    expect(await own.getByRole('button', { name: /Revoke/ }).isDisabled()).toBe(true);
    expect(await own.getByRole('combobox').isDisabled()).toBe(true);
    const other = page.locator(`tr[data-subject="${SUBJECT('tenant_viewer')}"]`);
    expect(await other.getByRole('button', { name: /Revoke/ }).isDisabled()).toBe(false);
    // Another subject's role can be changed (the role tests above are done with this subject).
    await other.getByRole('combobox').selectOption('tenant_auditor');
    await other.getByRole('button', { name: /Save role/ }).click();
    await other.getByRole('cell', { name: 'tenant_auditor', exact: true }).waitFor();

    const list = await api()(
      'GET',
      `/v1/tenants/${tenantId}/role-assignments?status=active`,
      asSubject(token),
    );
    const mine = list.body.data.find((a: any) => a.subject_id === SUBJECT('tenant_admin'));
    const revoke = await api()('POST', `/v1/tenants/${tenantId}/role-assignments/${mine.id}/revoke`, {
      ...asSubject(token),
      body: {},
    });
    expect(revoke.status).toBe(409);
    await closeClean({ page, errors });
  }, 120_000);
  it('when an admin edits the widget configuration, then the live preview follows the draft, the save is kept, and a viewer sees it read-only', async () => {
    const { page, errors, token } = await openAs('tenant_admin', 'widget');
    await page
      .getByLabel('Allowed origins (https, one a line)')
      .fill('https://shop.example.com\nhttps://app.example.com');
    await page.getByLabel('Primary colour').fill('#ffcc00');
    await page.getByLabel('Locale').fill('de-CH');
    const preview = page.getByTestId('widget-preview');
    await preview.getByText('Mandat bestätigen').waitFor();
    // The preview paints the draft's colour (and black text on it, the readable one).
    const paint = await page.getByTestId('widget-preview-button').evaluate((el) => {
      const style = (globalThis as unknown as BrowserGlobals).getComputedStyle(el);
      return { backgroundColor: style.backgroundColor, color: style.color };
    });
    expect(paint).toEqual({ backgroundColor: 'rgb(255, 204, 0)', color: 'rgb(0, 0, 0)' });
    await page.getByRole('button', { name: 'Save widget configuration' }).click();
    await page.getByTestId('widget-saved').getByText('Widget configuration saved.').waitFor();
    await expectAccessible(page, 'tenant_admin-widget-saved');
    const saved = await api()('GET', `/v1/tenants/${tenantId}/widget-config`, asSubject(token));
    expect(saved.body).toMatchObject({
      allowed_origins: ['https://shop.example.com', 'https://app.example.com'],
      theme: { primary_color: '#ffcc00' },
      locale: 'de-CH',
    });
    await page.context().close();

    const viewer = await openAs('tenant_auditor', 'widget');
    await viewer.page.getByTestId('widget-origins').getByText('https://shop.example.com').waitFor();
    expect(await viewer.page.getByRole('button', { name: 'Save widget configuration' }).count()).toBe(0);
    await viewer.page.getByTestId('widget-preview').getByText('Mandat bestätigen').waitFor();
    const put = await api()('PUT', `/v1/tenants/${tenantId}/widget-config`, {
      ...asSubject(viewer.token),
      body: { allowed_origins: [] },
    });
    expect(put.status).toBe(403);
    expect([...errors, ...viewer.errors]).toEqual([]);
    await viewer.page.context().close();
  }, 120_000);

  it("when a tenant's key made requests this month, then Billing shows the plan, the days to reset and that key's use as a bar", async () => {
    const { page, errors, token } = await signedInAs('tenant_admin');
    const before = await api()('GET', '/v1/usage', asSubject(token));
    expect(before.status).toBe(200);
    await page.goto(`${stack.url}/dashboard/billing`);
    await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
    expect(await page.getByTestId('plan').textContent()).toBe('enterprise');
    expect(Number(await page.getByTestId('days-to-reset').textContent())).toBeGreaterThan(0);
    // The first key of the tenant (its creation's) has made this test's setup calls.
    const first = before.body.usage.find((u: { key_id?: string }) => u.key_id);
    expect(first.used).toBeGreaterThan(0);
    await page.getByTestId(`used-${first.key_id}`).waitFor();
    expect(await page.getByRole('meter', { name: /Quota use of/ }).count()).toBeGreaterThan(0);
    await expectAccessible(page, 'tenant_admin-billing-usage');
    await closeClean({ page, errors });
  }, 120_000);

  it('when a mandate expires within 7 days, then Governance counts mandates by state and lists it, the keys holding tenants:admin and the role assignments', async () => {
    const { page, errors, token } = await signedInAs('tenant_admin');
    const soon = await api()('POST', '/v1/mandates', {
      ...asSubject(token),
      body: {
        principal: { id: 'user_bob', type: 'person' },
        delegate: { id: 'agent_soon', type: 'agent' },
        scope: { actions: ['payments:*'] },
        expires_at: new Date(Date.now() + 3 * 86_400_000).toISOString(),
      },
    });
    expect(soon.status).toBe(201);
    await page.goto(`${stack.url}/dashboard/governance`);
    await page.getByRole('heading', { level: 1, name: 'Governance' }).waitFor();
    await page.getByTestId('gov-expiring').locator(`a[href$="/mandates/${soon.body.id}"]`).waitFor();
    expect(Number(await page.getByTestId('state-count-ACTIVE').textContent())).toBeGreaterThanOrEqual(1);
    // The tenant's first key holds tenants:admin; every subject of this test has an assignment.
    await page.getByTestId('gov-admin-keys').getByRole('cell', { name: 'Initial key' }).waitFor();
    await page
      .getByTestId('gov-roles')
      .getByRole('cell', { name: SUBJECT('tenant_admin') })
      .waitFor();
    await page.waitForLoadState('networkidle');
    await expectAccessible(page, 'tenant_admin-governance');
    await closeClean({ page, errors });
  }, 120_000);

  it('when a tampered evidence bundle is uploaded in Trust operations, then it fails with the failing check named; the untouched bundle checks out', async () => {
    const { page, errors, token } = await signedInAs('tenant_admin');
    const evidence = await api()('GET', `/v1/mandates/${mandateId}/evidence`, asSubject(token));
    expect(evidence.status).toBe(200);
    await page.goto(`${stack.url}/dashboard/trust`);
    await page.getByRole('heading', { level: 1, name: 'Trust operations' }).waitFor();
    expect(await page.getByTestId('signs-now').textContent()).toBe('signs now');
    const kid = evidence.body.mandate.signature.kid as string;
    await page.locator(`tr[data-kid="${kid}"]`).waitFor();

    const upload = (name: string, body: unknown) =>
      page.getByLabel('Evidence bundle (JSON)').setInputFiles({
        name,
        mimeType: 'application/json',
        buffer: Buffer.from(JSON.stringify(body)),
      });
    await upload('good.evidence.json', evidence.body);
    await page.getByTestId('evidence-verdict').getByText('The bundle checks out.').waitFor();

    const tampered = structuredClone(evidence.body);
    tampered.mandate.scope.constraints = { max_amount: 99_999_999, currency: 'EUR' };
    await upload('tampered.evidence.json', tampered);
    await page.getByTestId('evidence-verdict').getByText('The bundle does NOT check out.').waitFor();
    const failed = await page.getByTestId('evidence-failed').textContent();
    expect(failed).toMatch(/^Failed: .*digest/);
    await page.getByText(/^FAIL digest:/).waitFor();
    await expectAccessible(page, 'tenant_admin-trust-tampered');
    await closeClean({ page, errors });
  }, 120_000);

  it('when an operator-role subject asks the verification playground, then it shows the decision and its reason, a denial compared in words', async () => {
    const { page, errors } = await openAs('tenant_operator', 'verify');
    await page.getByLabel('Mandate id').fill(mandateId);
    await page.getByLabel('Action').fill('payments:create');
    await page.getByLabel('Amount (minor units)').fill('1200');
    await page.getByLabel('Currency').fill('EUR');
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByTestId('decision').waitFor();
    expect(await page.getByTestId('decision').textContent()).toBe('ALLOW');
    expect(await page.getByTestId('reason').textContent()).toBe('OK');
    await page.getByLabel('Amount (minor units)').fill('999999');
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByTestId('decision').getByText('DENY').waitFor();
    expect(await page.getByTestId('reason').textContent()).toBe('AMOUNT_EXCEEDS_LIMIT');
    // The request's amount against the mandate's limit, from the catalogue (docs/API.md#reasons-in-words).
    const said = "Amount 9,999.99 EUR exceeds the mandate's limit of 500.00 EUR per call.";
    await page.getByTestId('reason-words').filter({ hasText: said }).waitFor();
    expect(await page.getByTestId('reason-words').textContent()).toBe(said);
    await expectAccessible(page, 'tenant_operator-verify-decision');
    await closeClean({ page, errors });
  }, 120_000);

  it('when an operator-role subject suspends a mandate with a reason, then the state changes, the timeline shows the event, and the evidence downloads and checks out in the browser', async () => {
    const { page, errors } = await openAs('tenant_operator', 'mandates');
    await page.getByLabel('State').selectOption('SUSPENDED');
    await page.getByText('No mandates.').waitFor();
    await page.getByLabel('State').selectOption('ACTIVE');
    await page.getByLabel('Delegate id').fill('agent_42');
    // The list shows ids shortened: the link is found by where it leads.
    await page.locator(`a[href$="/mandates/${mandateId}"]`).click();
    await page.getByRole('heading', { level: 1, name: `Mandate ${mandateId}` }).waitFor();
    await page.getByRole('button', { name: 'Suspend', exact: true }).click();
    await page.getByRole('dialog', { name: 'Suspend mandate' }).getByLabel('Reason').fill('card lost');
    await page.getByRole('button', { name: 'Suspend mandate' }).click();
    await eventually(async () =>
      (await page.getByTestId('mandate-state').textContent()) === 'SUSPENDED' ? true : undefined,
    );
    await page.getByText('MANDATE_SUSPENDED').first().waitFor({ timeout: 15_000 });

    // The evidence bundle: downloaded as a file, and checked in the page by the offline checker's code.
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download and check evidence' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe(`${mandateId}.evidence.json`);
    await file.saveAs(path.join(ARTIFACTS, file.suggestedFilename()));
    expect(await page.getByTestId('evidence-verdict').textContent()).toBe('The bundle checks out.');
    for (const check of ['digest', 'bundle signature', 'mandate signature', 'pinned keys'])
      await page.getByText(`OK ${check}:`).waitFor();
    await expectAccessible(page, 'tenant_operator-mandate-detail');
    await closeClean({ page, errors });
  }, 120_000);

  it('when an auditor filters the audit log by resource, then by key, then by a time window, then only the matching events show', async () => {
    const { page, errors } = await openAs('tenant_auditor', 'audit');
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    // The events' table, not the log's checkpoints below it.
    const events = 'table:not([data-testid="checkpoints"] table) tbody tr';
    const rows = () => page.locator(events);
    // A cell's text, or the whole id where it shows an id shortened (its title).
    const column = (n: number) =>
      page.$$eval(`${events} td:nth-child(${n})`, (cells) =>
        cells.map((c) => c.querySelector('[title]')?.getAttribute('title') ?? c.textContent ?? ''),
      );

    await page.getByLabel('Resource id').fill(mandateId);
    await eventually(async () =>
      (await column(4)).every((r) => r.endsWith(mandateId)) && (await rows().count()) > 0 ? true : undefined,
    );
    expect(await column(2)).toContain('MANDATE_CREATED');

    await page.getByLabel('Resource id').fill('');
    // The tenant's first key: it made every seeding call.
    const keyId = firstKey.keyId;
    await page.getByLabel('Key id').fill(keyId);
    await eventually(async () =>
      (await column(3)).every((a) => a === keyId) && (await rows().count()) > 0 ? true : undefined,
    );

    // A window that ended before the tenant existed holds nothing.
    await page.getByLabel('Key id').fill('');
    await page.getByLabel('Until').fill('2020-01-01T00:00');
    await page.getByText('No events.').waitFor();
    await page.getByLabel('Until').fill('');
    await page.getByLabel('From').fill('2020-01-01T00:00');
    await rows().first().waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await closeClean({ page, errors });
  }, 120_000);

  it('when a viewer opens the webhooks, then each URL shows without its query string and the page says why; the admin sees it whole', async () => {
    const url = 'https://127.0.0.1:9/viewer-hook?token=capability-s3cr3t';
    const created = await api()('POST', '/v1/webhook-endpoints', {
      auth: firstKey.auth,
      body: { url, event_types: ['MANDATE_REVOKED'] },
    });
    expect(created.status).toBe(201);
    const viewer = await openAs('tenant_viewer', 'webhooks');
    await viewer.page.getByRole('cell', { name: 'https://127.0.0.1:9/viewer-hook', exact: true }).waitFor();
    await viewer.page.getByTestId('url-redacted').waitFor();
    expect(await viewer.page.content()).not.toContain('capability-s3cr3t');
    await closeClean(viewer);
    const admin = await openAs('tenant_admin', 'webhooks');
    await admin.page.getByRole('cell', { name: url, exact: true }).waitFor();
    expect(await admin.page.getByTestId('url-redacted').count()).toBe(0);
    await closeClean(admin);
    const deleted = await api()('DELETE', `/v1/webhook-endpoints/${created.body.id}`, {
      auth: firstKey.auth,
    });
    expect(deleted.status).toBe(200);
  }, 120_000);

  it('when an admin adds a webhook endpoint, then its secret is shown once, a test event reaches the receiver and is listed with its attempt, and retry adds one', async () => {
    const received: string[] = [];
    const receiver = createServer((req, res) => {
      received.push(String(req.headers['webhook-id']));
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    try {
      const { page, errors } = await openAs('tenant_admin', 'webhooks');
      await page.getByLabel('URL (https)').fill(url);
      const picker = page.getByTestId('event-type-picker');
      await picker.getByLabel('All event types (*)').uncheck();
      await picker.getByLabel('MANDATE_REVOKED', { exact: true }).check();
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      expect(await page.getByTestId('secret').textContent()).toMatch(/^whsec_/);
      await page.getByRole('cell', { name: url, exact: true }).waitFor();

      await page.getByRole('button', { name: `Send test ${url}` }).click();
      await eventually(async () => (received.length === 1 ? true : undefined));
      await page.getByRole('button', { name: `Deliveries ${url}` }).click();
      await page.getByRole('cell', { name: 'SUCCEEDED' }).waitFor();
      await page
        .getByText(/HTTP 200/)
        .first()
        .waitFor();
      await page.getByRole('button', { name: /^Retry/ }).click();
      await eventually(async () => (received.length === 2 ? true : undefined));
      // The same event, the same webhook-id.
      expect(received[1]).toBe(received[0]);
      await page.getByText(/manual/).waitFor();
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: path.join(ARTIFACTS, 'tenant_admin-webhooks-deliveries.png') });
      await closeClean({ page, errors });
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  }, 120_000);
});
