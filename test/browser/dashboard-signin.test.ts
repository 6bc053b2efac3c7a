import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { decodeJwt } from 'jose';
import type { Browser } from 'playwright-core';
import type { EmbeddedStack } from '../../scripts/embedded';
import {
  answerAuthorizationRequest,
  DEFAULT_TEST_ISSUER_SEED,
  createTestPidIssuer,
  randomPerson,
  type TestPidIssuer,
} from '@mandate/test-wallet';
import { apiClient, freePort } from '../support/stack';
import {
  ROLE_AREAS,
  closeClean,
  ROOT,
  expectAccessible,
  describeIfChromium,
  navAreas,
  openPage,
  startDashboardStack,
  shownAuthorizationRequest,
} from './browser-support';

/**
 * The dashboard's two real sign-ins in a real browser (Debian's chromium, playwright-core) against
 * `npm start`'s in-process stack: OIDC authorization code + PKCE through a real OpenID provider
 * (panva's oidc-provider, test/support/oidc-provider.mjs, its own login page), and the wallet
 * sign-in answered by the project's test wallet with the embedded TEST PID issuer. Each ends in
 * the dashboard with exactly the navigation of the subject's role; no console error on the
 * dashboard's pages, no serious or critical axe-core violation on the new ones.
 */
const CLIENT_ID = 'mandate-dashboard';
const RESOURCE = 'https://mandate-api.test';
const OTHER_RESOURCE = 'https://other-api.test';

/** Browser-side globals, typed here (the repository's tsconfig has no DOM library). */
type BrowserGlobals = {
  sessionStorage: {
    getItem(k: string): string | null;
    readonly length: number;
    key(i: number): string | null;
  };
};
const storedSession = () =>
  JSON.parse(
    (globalThis as unknown as BrowserGlobals).sessionStorage.getItem('mandate-dashboard-session') ?? 'null',
  ) as { token: string; method: string; tenantId: string; subjectId: string } | null;
const storageKeys = () => {
  const s = (globalThis as unknown as BrowserGlobals).sessionStorage;
  return Array.from({ length: s.length }, (_, i) => s.key(i));
};

/** Starts test/support/oidc-provider.mjs and answers its issuer once it listens. */
async function startProvider(redirectUri: string): Promise<{ issuer: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'test/support/oidc-provider.mjs')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      OIDC_CLIENT_ID: CLIENT_ID,
      OIDC_REDIRECT_URI: redirectUri,
      OIDC_RESOURCE: RESOURCE,
      OIDC_OTHER_RESOURCE: OTHER_RESOURCE,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
  const issuer = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (line.startsWith('{')) resolve((JSON.parse(line) as { issuer: string }).issuer);
    });
    child.once('exit', (code) => reject(new Error(`oidc-provider exited (${code}): ${stderr.join('')}`)));
  });
  return { issuer, child };
}

describeIfChromium('dashboard sign-in (OIDC and wallet) in a real browser', () => {
  let stack: EmbeddedStack;
  let provider: { issuer: string; child: ChildProcess };
  let browser: Browser;
  let pidIssuer: TestPidIssuer;
  let tenantId: string;
  let adminAuth: string;
  const api = () => apiClient(stack.url);

  beforeAll(async () => {
    // A fixed port: the provider's redirect URI and the wallet's request object name it before the gateway listens.
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    provider = await startProvider(`${base}/dashboard/callback`);
    ({
      stack,
      browser,
      tenantId,
      auth: adminAuth,
    } = await startDashboardStack({
      tenantName: 'Sign-in Co',
      env: {
        PORT: String(port),
        // The provider's access tokens for RESOURCE are dashboard callers; npm start adds the wallet issuer.
        JWT_ISSUERS: JSON.stringify([
          {
            name: 'dashboard',
            issuer: provider.issuer,
            jwks_uri: `${provider.issuer}/jwks`,
            audience: RESOURCE,
            subject_scheme: 'dashboard',
          },
        ]),
        DASHBOARD_OIDC_ISSUER: provider.issuer,
        DASHBOARD_OIDC_CLIENT_ID: CLIENT_ID,
        DASHBOARD_OIDC_SCOPE: 'openid api',
        DASHBOARD_OIDC_AUDIENCE: RESOURCE,
        // Wallet polls, answers and sign-ins share the per-IP onboarding bucket; every client here is 127.0.0.1.
        PLAN_OVERRIDES: JSON.stringify({ onboarding: { rate: 1000, burst: 1000 } }),
      },
    }));
    pidIssuer = await createTestPidIssuer({ seed: DEFAULT_TEST_ISSUER_SEED });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    if (provider?.child.exitCode === null) {
      const exited = new Promise((resolve) => provider.child.once('exit', resolve));
      provider.child.kill('SIGTERM');
      await exited;
    }
  }, 30_000);

  const assign = async (subjectId: string, role: string) => {
    const res = await api()('POST', `/v1/tenants/${tenantId}/role-assignments`, {
      auth: adminAuth,
      body: { subject_id: subjectId, roles: [role] },
    });
    expect(res.status).toBe(201);
  };

  /**
   * A fresh tab recording the console errors and page errors of the dashboard's own pages (the
   * provider's login page is not ours: it imports a web font the sandboxed browser cannot fetch).
   */
  const openOurPage = () => openPage(browser, (url) => url.startsWith(`${stack.url}/dashboard`));

  it('when the gateway is configured for OIDC and the wallet, then the sign-in page offers both, cleanly', async () => {
    const { page, errors } = await openOurPage();
    await page.goto(`${stack.url}/dashboard/`);
    const host = new URL(provider.issuer).host;
    await page.getByRole('button', { name: `Sign in with ${host}` }).waitFor();
    await page.getByRole('heading', { name: 'Sign in with your identity wallet' }).waitFor();
    await page.getByRole('heading', { name: 'Development sign-in' }).waitFor();
    const config = await api()('GET', '/dashboard/config.json');
    expect(config.body).toEqual({
      devSignIn: true,
      walletSignIn: true,
      oidc: { issuer: provider.issuer, client_id: CLIENT_ID, scope: 'openid api', audience: RESOURCE },
    });
    expect(config.headers.get('content-security-policy')).toContain(
      `connect-src 'self' ${new URL(provider.issuer).origin};`,
    );
    await page.waitForLoadState('networkidle');
    await expectAccessible(page, 'sign-in');
    expect(errors).toEqual([]);
  });

  it("when a subject with a role signs in through the provider's login page (code + PKCE), then the dashboard shows exactly its role's navigation and no code, state or verifier is left behind", async () => {
    await assign('dashboard:olivia', 'tenant_operator');
    const { page, errors } = await openOurPage();
    const authorizations: URL[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(`${provider.issuer}/auth?`)) authorizations.push(new URL(r.url()));
    });
    await page.goto(`${stack.url}/dashboard/`);
    await page.getByRole('button', { name: `Sign in with ${new URL(provider.issuer).host}` }).click();

    // The provider's own pages: its login form, then its consent.
    await page.locator('input[name="login"]').waitFor();
    await page.locator('input[name="login"]').fill('olivia');
    await page.locator('input[name="password"]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();

    // Back at the dashboard: the code and state are gone from the address bar, the tenant is asked.
    await page.getByLabel('Tenant id').waitFor();
    expect(page.url()).toBe(`${stack.url}/dashboard/callback`);
    await page.getByText('as olivia').waitFor();
    await page.waitForLoadState('networkidle');
    await expectAccessible(page, 'oidc-callback');
    await page.getByLabel('Tenant id').fill(tenantId);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.locator('nav[aria-label="Areas"] a').first().waitFor();
    expect(await navAreas(page)).toEqual(ROLE_AREAS.tenant_operator);
    expect(await page.getByTestId('who').textContent()).toContain(`dashboard:olivia · ${tenantId}`);

    const session = (await page.evaluate(storedSession))!;
    expect(session).toMatchObject({ method: 'oidc', tenantId, subjectId: 'dashboard:olivia' });
    expect(decodeJwt(session.token)).toMatchObject({ iss: provider.issuer, aud: RESOURCE, sub: 'olivia' });
    // Only the session is kept: the verifier and the token between callback and tenant choice are gone.
    expect(await page.evaluate(storageKeys)).toEqual(['mandate-dashboard-session']);
    // The authorization request carried an S256 challenge and the API as resource, never the verifier.
    expect(authorizations).toHaveLength(1);
    const params = Object.fromEntries(authorizations[0]!.searchParams);
    expect(params).toMatchObject({
      client_id: CLIENT_ID,
      response_type: 'code',
      code_challenge_method: 'S256',
      redirect_uri: `${stack.url}/dashboard/callback`,
      resource: RESOURCE,
    });
    expect(params.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Object.keys(params).sort()).toEqual(
      [
        'client_id',
        'code_challenge',
        'code_challenge_method',
        'redirect_uri',
        'resource',
        'response_type',
        'scope',
        'state',
      ].sort(),
    );
    await closeClean({ page, errors });
  });

  it('when the callback carries a state this tab did not send, or no sign-in was started, then no code is exchanged, the address bar is cleaned and nobody is signed in', async () => {
    const { page, errors } = await openOurPage();
    const tokenRequests: string[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(`${provider.issuer}/token`)) tokenRequests.push(r.url());
    });
    await page.goto(`${stack.url}/dashboard/`);
    await page.getByRole('button', { name: `Sign in with ${new URL(provider.issuer).host}` }).click();
    await page.locator('input[name="login"]').waitFor();
    const forged = `${stack.url}/dashboard/callback?code=forged-code&state=forged-state&iss=${encodeURIComponent(provider.issuer)}`;

    await page.goto(forged);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/state/i);
    expect(page.url()).toBe(`${stack.url}/dashboard/callback`);
    expect(await page.getByLabel('Tenant id').count()).toBe(0);

    // The verifier was spent by that attempt: the same link again finds no sign-in to finish.
    await page.goto(forged);
    await page
      .getByText('This sign-in was not started in this tab (or already finished): start again.')
      .waitFor();
    expect(page.url()).toBe(`${stack.url}/dashboard/callback`);
    expect(tokenRequests).toEqual([]);
    expect(await page.evaluate(storedSession)).toBeNull();
    expect(await page.evaluate(storageKeys)).toEqual([]);
    await closeClean({ page, errors });
  });

  it("when a token of the same issuer is for another audience, then the gateway refuses it (401); the dashboard's audience is a known subject without a role (404)", async () => {
    const token = async (resource: string) => {
      const res = await fetch(`${provider.issuer}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from('other-app:other-app-secret').toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'api', resource }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { access_token: string }).access_token;
    };
    const other = await token(OTHER_RESOURCE);
    expect(decodeJwt(other).aud).toBe(OTHER_RESOURCE);
    const me = (jwt: string) => api()('GET', '/v1/me', { auth: jwt, headers: { 'x-tenant-id': tenantId } });
    const refused = await me(other);
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ error: 'UNAUTHORIZED', message: 'Invalid bearer token' });
    expect((await me(await token(RESOURCE))).status).toBe(404);
  });

  it("when a person signs in with the wallet, then the page shows the request as a QR code, names the wallet: subject until it has a role, and with one the dashboard shows exactly that role's navigation", async () => {
    const person = randomPerson();
    const { page, errors } = await openOurPage();

    /** Starts a wallet sign-in on the page and lets the test wallet answer the request the page shows. */
    const walletSignIn = async () => {
      await page.getByLabel('Tenant id').first().waitFor();
      await page.locator('#wallet-tenant').fill(tenantId);
      await page.getByRole('button', { name: /Show QR code|Start again/ }).click();
      return shownAuthorizationRequest(page);
    };

    await page.goto(`${stack.url}/dashboard/`);
    const first = await walletSignIn();
    await page.waitForLoadState('networkidle');
    await expectAccessible(page, 'wallet-sign-in');
    expect((await answerAuthorizationRequest(first, { issuer: pidIssuer, person })).status).toBe(200);
    const noRole = page.getByText(/^Verified as wallet:\S+, but this identity holds no role/);
    await noRole.waitFor({ timeout: 15_000 });
    const subjectId = /Verified as (wallet:[^,\s]+),/.exec((await noRole.textContent())!)![1]!;
    expect(await page.evaluate(storedSession)).toBeNull();
    // The one console line of that step is the browser's note of GET /v1/me's 404 (no role in the tenant).
    expect(errors).toEqual([
      `${stack.url}/dashboard/sign-in: Failed to load resource: the server responded with a status of 404 (Not Found)`,
    ]);
    errors.length = 0;

    // An admin gives that subject a role; the same person signs in again.
    await assign(subjectId, 'tenant_auditor');
    const second = await walletSignIn();
    expect(second).not.toBe(first);
    expect((await answerAuthorizationRequest(second, { issuer: pidIssuer, person })).status).toBe(200);
    await page.locator('nav[aria-label="Areas"] a').first().waitFor({ timeout: 15_000 });
    expect(await navAreas(page)).toEqual(ROLE_AREAS.tenant_auditor);
    await page.getByText('Wallet sign-in').waitFor();
    const session = (await page.evaluate(storedSession))!;
    expect(session).toMatchObject({ method: 'wallet', tenantId, subjectId });
    expect(decodeJwt(session.token).sub).toBe(subjectId.slice('wallet:'.length));
    await closeClean({ page, errors });
  });
});
