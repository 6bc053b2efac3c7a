/**
 * `npm run screenshots:dashboard`: the README's images of the dashboard, made anew. Starts `npm
 * start`'s in-process stack on a free port, gives a demo tenant something to show (keys, role
 * assignments, mandates in several states, verifications, a widget configuration, an onboarding
 * request), signs in in Debian's chromium as the tenant's admin (development sign-in) and as the
 * operator, and saves two images of every area: docs/dashboard/<area>.png at 1440 px wide and
 * docs/dashboard/<area>-390.png at 390 px (a phone).
 *
 * The areas come from the dashboard's own table (packages/dashboard/src/areas.ts), so a new area
 * gets its image without touching this script.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { OPERATOR_AREAS, TENANT_AREAS, type Area } from '../packages/dashboard/src/areas';
import { CHROMIUM, devSignIn, launchChromium, operatorSignIn } from '../test/browser/browser-support';
import { startEmbedded } from './embedded';
import { freePort } from './services';

const OUT = path.resolve(__dirname, '../docs/dashboard');
const ADMIN = 'dashboard:alice';
const WIDE = { width: 1440, height: 900 };
const NARROW = { width: 390, height: 844 };

// The demo's JSON answers are read by field name only: typing each would add nothing here.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Api = (method: string, p: string, body?: unknown, auth?: string) => Promise<any>;

async function main() {
  mkdirSync(OUT, { recursive: true });
  // A fixed port: embedded mode offers the wallet (and its sign-in) only where it knows its own URL.
  const port = String(await freePort());
  const stack = await startEmbedded({ PORT: port, PATH: process.env.PATH }, true);
  const browser = await launchChromium(process.env.CHROMIUM ?? CHROMIUM);
  try {
    const call =
      (defaultAuth?: string, tenantId?: string): Api =>
      async (method, p, body, auth = defaultAuth) => {
        const headers: Record<string, string> = {};
        if (auth) headers.authorization = `Bearer ${auth}`;
        if (tenantId) headers['x-tenant-id'] = tenantId;
        if (body !== undefined) headers['content-type'] = 'application/json';
        const res = await fetch(stack.url + p, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        if (res.status >= 300) throw new Error(`${method} ${p} → ${res.status} ${text}`);
        return text ? JSON.parse(text) : undefined;
      };
    const operator = call(stack.operatorToken);
    const created = await operator('POST', '/v1/platform/tenants', {
      name: 'Acme Payments',
      plan: 'enterprise',
      admin_subject_id: ADMIN,
    });
    const tenantId: string = created.tenant.id;
    const api = call(`${tenantId}:${created.api_key.api_key}`);
    await seed(api, tenantId);
    await call()('POST', '/v1/onboarding/request', {
      organization_name: 'Globex Agents',
      contact_email: 'ops@globex.example',
      country: 'DE',
    });

    const context = await browser.newContext({ viewport: WIDE });
    const page = await context.newPage();
    await page.goto(`${stack.url}/dashboard/`);
    await page.getByRole('heading', { name: 'Development sign-in' }).waitFor();
    await shoot(page, 'sign-in');
    await page.setViewportSize(NARROW);
    await shoot(page, 'sign-in-390');
    await page.setViewportSize(WIDE);
    await devSignIn(page, stack.url, tenantId, ADMIN);
    for (const area of TENANT_AREAS) await visit(page, stack.url, area);
    await context.close();

    const operatorContext = await browser.newContext({ viewport: WIDE });
    const operatorPage = await operatorContext.newPage();
    await operatorSignIn(operatorPage, stack.url, stack.operatorToken);
    for (const area of OPERATOR_AREAS) await visit(operatorPage, stack.url, area);
    await operatorContext.close();
  } finally {
    await browser.close();
    await stack.stop();
  }
}

/** Something in every area: keys, assignments, mandates in four states, verifications, a widget. */
async function seed(api: Api, tenantId: string) {
  const keys = `/v1/tenants/${tenantId}/api-keys`;
  await api('POST', keys, { name: 'checkout-backend', scopes: ['mandates:read', 'verify'] });
  const old = await api('POST', keys, { name: 'legacy-batch', scopes: ['mandates:write'] });
  await api('POST', `${keys}/${old.key_id}/revoke`);
  for (const [subject, role] of [
    ['dashboard:bob', 'tenant_operator'],
    ['dashboard:carol', 'tenant_viewer'],
    ['dashboard:dave', 'tenant_auditor'],
  ])
    await api('POST', `/v1/tenants/${tenantId}/role-assignments`, { subject_id: subject, roles: [role] });
  // Drift monitoring: a baseline, then a change since it.
  await api('PUT', `/v1/tenants/${tenantId}/access-baseline`);
  await api('POST', keys, { name: 'reporting', scopes: ['events:read'] });
  await api('POST', '/v1/identity-verifications', { purpose: 'mandate' });
  await api('PUT', `/v1/tenants/${tenantId}/widget-config`, {
    allowed_origins: ['https://shop.acme.example'],
    theme: { primary_color: '#0b5fff' },
    locale: 'en',
  });

  const mandate = (delegate: string, extra: Record<string, unknown> = {}) =>
    api('POST', '/v1/mandates', {
      principal: { id: 'user_alice', type: 'person' },
      delegate: { id: delegate, type: 'agent' },
      scope: { actions: ['payments:*'], constraints: { max_amount: 50000, currency: 'EUR' } },
      ...extra,
    });
  const active = await mandate('agent_checkout');
  await mandate('agent_refunds', { expires_at: new Date(Date.now() + 3 * 86_400_000).toISOString() });
  const suspended = await mandate('agent_travel');
  await api('POST', `/v1/mandates/${suspended.id}/suspend`, { reason: 'card reported lost' });
  const revoked = await mandate('agent_old');
  await api('POST', `/v1/mandates/${revoked.id}/revoke`, { reason: 'agent retired' });
  for (const amount of [1200, 4999, 75000, 20000, 90000, 300])
    await api('POST', '/v1/verify', {
      mandate_id: active.id,
      action: 'payments:create',
      amount,
      currency: 'EUR',
    });
  await api('POST', '/v1/verify', { mandate_id: suspended.id, action: 'payments:create' });
  // The audit trail is fed through the in-process bus: let it land before the pages read it.
  await new Promise((r) => setTimeout(r, 1_000));
}

/** An area at both widths: <area>.png (1440 px) and <area>-390.png. */
async function visit(page: Page, base: string, area: Area) {
  for (const [viewport, name] of [
    [WIDE, area.id],
    [NARROW, `${area.id}-390`],
  ] as const) {
    await page.setViewportSize(viewport);
    await page.goto(`${base}/dashboard${area.path}`);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    await page.waitForLoadState('networkidle');
    await shoot(page, name);
  }
  await page.setViewportSize(WIDE);
}

async function shoot(page: Page, name: string) {
  const file = path.join(OUT, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  process.stdout.write(`${path.relative(process.cwd(), file)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
