import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger } from '@mandate/shared/observability';
import { ServiceClient } from '@mandate/shared/http';
import { testTokens } from '@mandate/shared/testing';
import type { GatewayApp, GatewayDeps, Upstreams } from '../src/app';
import { keysOf, testGateway } from './helpers';
import type { SubjectResolver } from '../src/auth/subject-resolver';
import { DevSignIn } from '../src/dashboard/dev-sign-in';
import { DASHBOARD_CSP, DASHBOARD_NOT_BUILT } from '../src/dashboard/static';
import { loadGatewayConfig } from '../src/config';
import { dashboardOidc } from '../src/wiring';

const TENANT = 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa';
const keys = keysOf({
  'secret-verify': { key_id: 'key_v', tenant_id: TENANT, scopes: ['verify'], status: 'active', plan: 'beta' },
});

/** A built dashboard in a temporary directory: index.html and one hashed asset. */
function fakeBuild(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'dashboard-'));
  mkdirSync(path.join(dir, 'assets'));
  writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>dash</title>');
  writeFileSync(path.join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
  return dir;
}

describe('gateway: the dashboard at /dashboard/ and GET /v1/me', () => {
  const gateways: GatewayApp[] = [];
  const client = new ServiceClient(['http://127.0.0.1:9']);
  const start = async (dir: string, options: Partial<NonNullable<GatewayDeps['dashboard']>> = {}) => {
    const upstreams: Upstreams = { mandates: client, verify: client, identity: client, audit: client };
    const g = testGateway({
      upstreams,
      keys,
      operatorToken: 'operator-secret',
      dashboard: { dir, ...options },
    });
    gateways.push(g);
    return (await g.start(0)).url;
  };
  afterAll(async () => {
    for (const g of gateways) await g.stop();
    await client.close();
  });

  it('when the dashboard is built, then its files are served without a credential, assets cached for a year, index.html revalidated, under a strict CSP', async () => {
    const base = await start(fakeBuild());
    const index = await fetch(`${base}/dashboard/`);
    expect(index.status).toBe(200);
    expect(await index.text()).toContain('<title>dash</title>');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).toContain("script-src 'self'");
    expect(DASHBOARD_CSP).not.toContain('unsafe-inline');

    const asset = await fetch(`${base}/dashboard/assets/index-abc123.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');

    // A deep link of the app is index.html; a missing asset is a 404, never index.html.
    const deep = await fetch(`${base}/dashboard/mandates/mnd_123`);
    expect(deep.status).toBe(200);
    expect(await deep.text()).toContain('<title>dash</title>');
    expect((await fetch(`${base}/dashboard/assets/missing.js`)).status).toBe(404);

    const bare = await fetch(`${base}/dashboard`, { redirect: 'manual' });
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe('/dashboard/');
  });

  it('when the dashboard is not built, then /dashboard/ is a 404 envelope saying so', async () => {
    const base = await start(path.join(tmpdir(), 'no-such-dashboard-build'));
    const res = await fetch(`${base}/dashboard/`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'NOT_FOUND', message: DASHBOARD_NOT_BUILT });
  });

  it('when the static mount exists, then /v1 routing is unchanged: an unknown /v1 path is a 404 and a route still needs its credential', async () => {
    const base = await start(fakeBuild());
    expect((await fetch(`${base}/v1/dashboard/`)).status).toBe(404);
    expect((await fetch(`${base}/dashboardx`)).status).toBe(404);
    expect((await fetch(`${base}/v1/me`)).status).toBe(401);
  });

  it("when the development sign-in is not enabled (anything but npm start), then its paths are the route table's 404 and config.json says so", async () => {
    const base = await start(fakeBuild());
    const subjects = await fetch(`${base}/dashboard-dev/subjects?tenant_id=${TENANT}`);
    expect(subjects.status).toBe(404);
    expect(await subjects.json()).toEqual({ error: 'NOT_FOUND', message: 'Route not found' });
    const signIn = await fetch(`${base}/dashboard-dev/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenant_id: TENANT, subject_id: 'dashboard:alice' }),
    });
    expect(signIn.status).toBe(404);
    expect(await (await fetch(`${base}/dashboard/config.json`)).json()).toEqual({ devSignIn: false });
  });

  it('when the OIDC and wallet sign-ins are configured, then config.json names them and the CSP lets the app reach the issuer only', async () => {
    const oidc = {
      issuer: 'https://login.example.com/tenant-x',
      client_id: 'dashboard',
      scope: 'openid',
      audience: 'https://api.example.com',
    };
    const base = await start(fakeBuild(), { oidc, walletSignIn: true });
    const config = await fetch(`${base}/dashboard/config.json`);
    expect(await config.json()).toEqual({ devSignIn: false, walletSignIn: true, oidc });
    const csp = (await fetch(`${base}/dashboard/`)).headers.get('content-security-policy')!;
    expect(csp).toContain("connect-src 'self' https://login.example.com;");
    expect(csp).not.toContain('api.example.com');
    expect(csp.replace(' https://login.example.com', '')).toBe(DASHBOARD_CSP);
  });

  it('when DASHBOARD_OIDC_* is half set, then the gateway refuses to start; when unset, then no OIDC sign-in is offered', () => {
    const logger = createLogger('gateway-test', 'silent');
    const config = (env: NodeJS.ProcessEnv) => loadGatewayConfig({ OPERATOR_TOKEN: 'x', ...env });
    expect(() =>
      dashboardOidc(config({ DASHBOARD_OIDC_ISSUER: 'https://login.example.com' }), logger),
    ).toThrow('DASHBOARD_OIDC_ISSUER and DASHBOARD_OIDC_CLIENT_ID are set together, or neither');
    expect(dashboardOidc(config({}), logger)).toBeUndefined();
    expect(
      dashboardOidc(
        config({ DASHBOARD_OIDC_ISSUER: 'https://login.example.com', DASHBOARD_OIDC_CLIENT_ID: 'dash' }),
        logger,
      ),
    ).toEqual({ issuer: 'https://login.example.com', client_id: 'dash', scope: 'openid' });
  });

  it('when any valid key calls GET /v1/me, then it gets its tenant, key id and scopes', async () => {
    const base = await start(fakeBuild());
    const res = await fetch(`${base}/v1/me`, {
      headers: { authorization: `Bearer ${TENANT}:secret-verify` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      tenant_id: TENANT,
      kind: 'api_key',
      key_id: 'key_v',
      permissions: ['verify'],
      plan: 'beta',
    });
  });

  describe('the development sign-in (npm start only)', () => {
    const OTHER = 'tnt_01jbbbbbbbbbbbbbbbbbbbbbbb';
    // Every subject holds a role in every tenant: only the token's own tenant can refuse it.
    const everywhere: SubjectResolver = {
      resolve: async (tenant_id, subject_id) => ({
        tenant_id,
        subject_id,
        assignment_id: 'ras_x',
        roles: ['tenant_viewer'],
        permissions: ['mandates:read'],
        plan: 'beta',
      }),
      evict: () => undefined,
    };
    let base: URL;
    beforeAll(async () => {
      const devSignIn = await DevSignIn.create({
        identity: client,
        tokens: testTokens,
        subjects: everywhere,
        logger: createLogger('gateway-test', 'silent'),
      });
      const upstreams: Upstreams = { mandates: client, verify: client, identity: client, audit: client };
      const g = testGateway({
        upstreams,
        keys,
        operatorToken: 'operator-secret',
        jwt: devSignIn.authenticator(undefined),
        dashboard: { dir: fakeBuild(), devSignIn },
      });
      gateways.push(g);
      base = new URL((await g.start(0)).url);
    });

    /** One request with exactly these headers (fetch would not send a Host of our choosing). */
    const raw = (
      method: string,
      path: string,
      headers: Record<string, string>,
      body?: string,
    ): Promise<{ status: number; body: any }> =>
      new Promise((resolve, reject) => {
        const req = request(
          { host: base.hostname, port: base.port, method, path, headers, setHost: !('host' in headers) },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.on('end', () =>
              resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }),
            );
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const signInBody = JSON.stringify({ tenant_id: TENANT, subject_id: 'dashboard:alice' });
    const signIn = (headers: Record<string, string>, body = signInBody) =>
      raw('POST', '/dashboard-dev/sign-in', headers, body);
    const JSON_TYPE = { 'content-type': 'application/json' };

    it('when a development sign-in token of one tenant calls with another X-Tenant-Id, then 401; in its own tenant, then it is the subject', async () => {
      const answer = await signIn({ ...JSON_TYPE, host: `127.0.0.1:${base.port}` });
      expect(answer.status).toBe(200);
      const me = (tenant: string) =>
        raw('GET', '/v1/me', { authorization: `Bearer ${answer.body.token}`, 'x-tenant-id': tenant });
      expect(await me(OTHER)).toEqual({
        status: 401,
        body: { error: 'UNAUTHORIZED', message: 'This token was issued for another tenant' },
      });
      expect(await me(TENANT)).toMatchObject({
        status: 200,
        body: { tenant_id: TENANT, subject_id: 'dashboard:alice' },
      });
    });

    it('when the Host is not a loopback name or address, then 403 for both of its routes and no token', async () => {
      for (const host of [
        'evil.example',
        'evil.example:8080',
        'localhost.evil.example',
        '10.0.0.5',
        '[::2]:80',
        '',
      ]) {
        const refused = {
          status: 403,
          body: {
            error: 'FORBIDDEN',
            message:
              'The development sign-in answers only requests addressed to a loopback Host (localhost, 127.x.x.x, [::1])',
          },
        };
        expect({ host, ...(await signIn({ ...JSON_TYPE, host })) }).toEqual({ host, ...refused });
        expect({
          host,
          ...(await raw('GET', `/dashboard-dev/subjects?tenant_id=${TENANT}`, { host })),
        }).toEqual({ host, ...refused });
      }
      for (const host of ['localhost', 'LOCALHOST:3000', '127.0.0.1:8080', '127.1.2.3', '[::1]', '[::1]:9']) {
        const answer = await signIn({ ...JSON_TYPE, host });
        expect({ host, status: answer.status }).toEqual({ host, status: 200 });
      }
    });

    it('when the sign-in body is not application/json (a form, text/plain, none), then 400 and no token', async () => {
      for (const type of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data',
        undefined,
      ]) {
        const answer = await signIn({ host: 'localhost', ...(type ? { 'content-type': type } : {}) });
        expect({ type, ...answer }).toEqual({
          type,
          status: 400,
          body: { error: 'BAD_REQUEST', message: 'Content-Type must be application/json' },
        });
      }
      const charset = await signIn({ host: 'localhost', 'content-type': 'application/json; charset=utf-8' });
      expect(charset.status).toBe(200);
    });

    it('when the sign-in body names a member __proto__, names one twice or is not UTF-8, then 400 like every JSON body, and no token', async () => {
      const bodies: [string | Buffer, string][] = [
        [
          `{"tenant_id":"${TENANT}","subject_id":"dashboard:alice","__proto__":{"admin":true}}`,
          '__proto__ is not allowed as a member name',
        ],
        [`{"tenant_id":"${TENANT}","subject_id":"dashboard:alice","subject_id":"dashboard:bob"}`, 'twice'],
        [Buffer.from([0x7b, 0xff, 0x7d]), 'Request body is not valid UTF-8'],
      ];
      for (const [body, says] of bodies) {
        const answer = await signIn({ host: 'localhost', ...JSON_TYPE }, body as string);
        expect(answer.status).toBe(400);
        expect(answer.body.error).toBe('BAD_REQUEST');
        expect(answer.body.message).toContain(says);
        expect(answer.body.token).toBeUndefined();
      }
    });
  });
});
