import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { describeIfAvailable, SYNC_TIMEOUT_MS } from '@mandate/shared/testing';
import { startEmbedded, type EmbeddedStack } from '../../scripts/embedded';
import { apiClient } from '../support/stack';

/**
 * What the dashboard's browser tests (and scripts/dashboard-screenshots.ts) share: Debian's
 * chromium, the built dashboard in `npm start`'s stack with a tenant of known subjects, a tab that
 * records console and page errors, the development and operator sign-ins, and axe-core.
 */
export const CHROMIUM = '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);
export const ROOT = path.resolve(__dirname, '../..');
export const ARTIFACTS = path.join(ROOT, 'test-artifacts/dashboard');
const AXE = require.resolve('axe-core/axe.min.js');

export const SUBJECT = (role: string) => `dashboard:${role.replace('tenant_', '')}`;

/** Every area of the dashboard, in navigation order; the operator's console is in no tenant's navigation. */
export const AREAS = [
  'api-keys',
  'mandates',
  'verify',
  'audit',
  'access',
  'widget',
  'billing',
  'governance',
  'drift',
  'trust',
  'webhooks',
  'operator',
] as const;
export type AreaId = (typeof AREAS)[number];

/** A tenant role's navigation: every tenant area, in order, but the ones it lacks the permission for. */
const tenantAreasBut = (...hidden: AreaId[]): AreaId[] =>
  AREAS.filter((area) => area !== 'operator' && !hidden.includes(area));

/**
 * The areas each tenant role's navigation shows, in order (the issue's table: area → the permission
 * that opens it; each role's permissions decide the rest).
 */
export const ROLE_AREAS: Record<string, AreaId[]> = {
  tenant_admin: tenantAreasBut(),
  tenant_operator: ['mandates', 'verify', 'audit'],
  tenant_viewer: tenantAreasBut('verify', 'audit'),
  tenant_auditor: tenantAreasBut('verify'),
};

/** `describe` where chromium is installed; elsewhere skipped saying why, and failing on CI. */
export function describeIfChromium(title: string, body: () => void): void {
  describeIfAvailable(
    HAS_CHROMIUM,
    title,
    `${CHROMIUM} is missing (.ci/run installs Debian's chromium)`,
    body,
  );
}

/** Browser-side globals, typed here (the repository's tsconfig has no DOM library). */
type BrowserGlobals = {
  sessionStorage: { getItem(k: string): string | null };
  axe: {
    run(): Promise<{ violations: { id: string; impact: string; nodes: { target: unknown[] }[] }[] }>;
  };
  document: { documentElement: { scrollWidth: number } };
  innerWidth: number;
};

/** The signed-in tab's bearer token (evaluate it in the page). */
export const sessionToken = () =>
  JSON.parse((globalThis as unknown as BrowserGlobals).sessionStorage.getItem('mandate-dashboard-session')!)
    .token as string;

export function launchChromium(executablePath = CHROMIUM): Promise<Browser> {
  return chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

/** The dashboard in a started stack, a tenant whose admin and `roles` are SUBJECT(role), and chromium. */
export interface DashboardStack {
  stack: EmbeddedStack;
  browser: Browser;
  tenantId: string;
  /** The tenant's initial key (every scope), as `tenantId:secret`. */
  auth: string;
  /** The initial key's id. */
  keyId: string;
}

/**
 * Builds the dashboard, starts `npm start`'s in-process stack (`env` added to PORT 0 and PATH), has
 * the operator create the tenant `tenantName` with SUBJECT('tenant_admin') as its admin, assigns
 * each of `roles` to its SUBJECT, and launches chromium. Whatever started is stopped if a step fails.
 */
export async function startDashboardStack(options: {
  tenantName: string;
  roles?: string[];
  env?: NodeJS.ProcessEnv;
}): Promise<DashboardStack> {
  const build = spawnSync(process.execPath, ['scripts/build-dashboard.mjs'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: SYNC_TIMEOUT_MS,
  });
  if (build.status !== 0) throw new Error(`dashboard build failed: ${build.stdout}${build.stderr}`);
  mkdirSync(ARTIFACTS, { recursive: true });
  const stack = await startEmbedded({ PORT: '0', PATH: process.env.PATH, ...options.env }, true);
  try {
    const api = apiClient(stack.url);
    const tenant = await api('POST', '/v1/platform/tenants', {
      auth: stack.operatorToken,
      body: { name: options.tenantName, plan: 'enterprise', admin_subject_id: SUBJECT('tenant_admin') },
    });
    if (tenant.status !== 201) throw new Error(`tenant creation answered ${tenant.status}: ${tenant.text}`);
    const tenantId: string = tenant.body.tenant.id;
    const auth = `${tenantId}:${tenant.body.api_key.api_key}`;
    for (const role of options.roles ?? []) {
      const res = await api('POST', `/v1/tenants/${tenantId}/role-assignments`, {
        auth,
        body: { subject_id: SUBJECT(role), roles: [role] },
      });
      if (res.status !== 201) throw new Error(`assigning ${role} answered ${res.status}: ${res.text}`);
    }
    return { stack, browser: await launchChromium(), tenantId, auth, keyId: tenant.body.api_key.key_id };
  } catch (error) {
    await stack.stop();
    throw error;
  }
}

/** A DashboardStack for one describe, and an API client on its stack. */
export interface DashboardSuite extends DashboardStack {
  api(): ReturnType<typeof apiClient>;
}

/**
 * `startDashboardStack(options)` once for the enclosing describe (beforeAll), its browser and
 * stack stopped after it (afterAll). The handle is filled in by beforeAll, so read it inside hooks
 * and tests, not at describe time.
 */
export function dashboardForSuite(options: Parameters<typeof startDashboardStack>[0]): DashboardSuite {
  const suite = { api: () => apiClient(suite.stack.url) } as DashboardSuite;
  beforeAll(async () => {
    Object.assign(suite, await startDashboardStack(options));
  }, 120_000);
  afterAll(async () => {
    await suite.browser?.close();
    await suite.stack?.stop();
  });
  return suite;
}

/**
 * A fresh tab (its own sessionStorage) that records every console error and page error, on the
 * pages `recorded` accepts (by default all).
 */
export async function openPage(
  browser: Browser,
  recorded: (url: string) => boolean = () => true,
): Promise<{ page: Page; errors: string[] }> {
  // bypassCSP: axe-core is injected as an inline script, which the dashboard's CSP rightly refuses.
  // Reduced motion: dialogs and drawers open at once, so axe never sees them half faded in.
  const context = await browser.newContext({
    bypassCSP: true,
    viewport: { width: 1280, height: 900 },
    reducedMotion: 'reduce',
  });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && recorded(page.url())) errors.push(`${page.url()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => {
    if (recorded(page.url())) errors.push(`${page.url()}: ${e.message}`);
  });
  return { page, errors };
}

/** The `data-area` of each link in the dashboard's navigation, in order. */
export const navAreas = (page: Page) =>
  page.$$eval('nav[aria-label="Areas"] a', (links) =>
    links.map((a) => (a as unknown as { dataset: { area?: string } }).dataset.area),
  );

export async function devSignIn(page: Page, baseUrl: string, tenantId: string, subject: string) {
  await page.goto(`${baseUrl}/dashboard/`);
  await page.getByRole('heading', { name: 'Development sign-in' }).waitFor();
  await page.getByRole('region', { name: 'Development sign-in' }).getByLabel('Tenant id').fill(tenantId);
  await page.getByRole('button', { name: 'List subjects' }).click();
  await page.getByRole('button', { name: `Sign in as ${subject}` }).click();
  // attached, not visible: below 768 px the navigation waits behind the menu button.
  await page.locator('nav[aria-label="Areas"] a').first().waitFor({ state: 'attached' });
}

export async function operatorSignIn(page: Page, baseUrl: string, operatorToken: string) {
  await page.goto(`${baseUrl}/dashboard/sign-in`);
  await page.getByRole('heading', { name: 'Development sign-in' }).waitFor();
  await page.getByLabel('Operator token').fill(operatorToken);
  await page.getByRole('button', { name: 'Sign in as operator' }).click();
  // attached, not visible: below 768 px the navigation waits behind the menu button.
  await page.locator('nav[aria-label="Areas"] a').first().waitFor({ state: 'attached' });
}

/** The serious and critical axe-core violations of the page as it is now. */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => {
    const result = await (globalThis as unknown as BrowserGlobals).axe.run();
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}, ${v.nodes} nodes)`);
}

/** Every axe-core violation of the page as it is now, whatever its impact, with the elements it found. */
export async function allAxeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => {
    const result = await (globalThis as unknown as BrowserGlobals).axe.run();
    return result.violations.map(
      (v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => JSON.stringify(n.target)).join(' ')}`,
    );
  });
}

/** How far the page is wider than the window (0: no horizontal scroll). */
export const horizontalOverflow = (page: Page) =>
  page.evaluate(() => {
    const g = globalThis as unknown as BrowserGlobals;
    return Math.max(0, g.document.documentElement.scrollWidth - g.innerWidth);
  });

/** The widths every area is held to: a laptop and a phone (screenshots are taken at these two). */
export const WIDTHS = [
  { width: 1280, height: 900 },
  { width: 390, height: 844 },
] as const;

/** A desktop: the review's widest screen (its screenshots' width). */
export const DESKTOP = { width: 1440, height: 900 } as const;

/** A small laptop, or a tablet held sideways: the navigation beside the content leaves ~750 px for it. */
export const SMALL_LAPTOP = { width: 1024, height: 768 } as const;

/** A tablet in portrait: the width between, just at the shell's 768 px breakpoint (the navigation shows). */
export const TABLET = { width: 768, height: 1024 } as const;

/** Resolves once the page has laid itself out again (two animation frames), e.g. after a resize. */
export const laidOut = (page: Page) =>
  page.evaluate(
    () =>
      new Promise<void>((resolve) =>
        (globalThis as unknown as { requestAnimationFrame(f: () => void): void }).requestAnimationFrame(() =>
          (globalThis as unknown as { requestAnimationFrame(f: () => void): void }).requestAnimationFrame(
            () => resolve(),
          ),
        ),
      ),
  );

/** Expects no serious or critical axe-core violation on the page as it is now, and saves its full-page screenshot as `name`.png. */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  expect(await axeViolations(page)).toEqual([]);
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Expects that the tab recorded no console or page error, and closes it. */
export async function closeClean({ page, errors }: { page: Page; errors: string[] }): Promise<void> {
  expect(errors).toEqual([]);
  await page.context().close();
}

/** Browser-side view of an element, typed here (the repository's tsconfig has no DOM library). */
type Box = {
  tagName: string;
  className: unknown;
  textContent: string | null;
  scrollWidth: number;
  clientWidth: number;
  getAttribute(name: string): string | null;
  closest(selector: string): Box | null;
  querySelector(selector: string): Box | null;
  matches(selector: string): boolean;
  parentElement: Box | null;
};
type Dom = {
  document: { querySelectorAll(selector: string): Iterable<Box> };
  getComputedStyle(el: Box): { overflowX: string };
};

/**
 * Every element that scrolls sideways inside itself: any element whose computed overflow-x is
 * `auto` or `scroll` (a DataTable's .table-wrap, Mantine's Table.ScrollContainer and ScrollArea
 * viewports, Mantine's Code, a code snippet, a textarea) and whose content is wider than its box by
 * more than a pixel (rounding). An element with `overflow-x: hidden` or `clip` is not counted: it
 * cuts on purpose (an ellipsis), and badges are held by truncatedBadges. With `tablesMayScroll`, a
 * box that holds a table is let scroll (a wide table's last resort on a narrow window). Each finding
 * as "<tag.class> (table "<caption>") | "<text>": N px hidden".
 */
export const insideScroll = (page: Page, options: { tablesMayScroll?: boolean } = {}) =>
  page.evaluate((tablesMayScroll) => {
    const g = globalThis as unknown as Dom;
    const found: string[] = [];
    for (const el of g.document.querySelectorAll('body *')) {
      const { overflowX } = g.getComputedStyle(el);
      if (overflowX !== 'auto' && overflowX !== 'scroll') continue;
      const hidden = el.scrollWidth - el.clientWidth;
      if (hidden <= 1) continue;
      const table = el.querySelector('table');
      if (table && tablesMayScroll) continue;
      const caption = table?.querySelector('caption')?.textContent;
      const classes = typeof el.className === 'string' ? el.className.split(/\s+/).slice(0, 2).join('.') : '';
      found.push(
        `${el.tagName.toLowerCase()}${classes ? `.${classes}` : ''}` +
          `${caption ? ` (table "${caption}")` : ` "${(el.textContent ?? '').trim().slice(0, 40)}"`}: ${hidden} px hidden`,
      );
    }
    return found;
  }, options.tablesMayScroll === true);

/**
 * Every element matching `selector` whose text is cut (wider than its box: clipped or ended with an
 * ellipsis), as "<the whole text of its closest `whole`> in <the table's caption or the page>".
 */
const truncated = (page: Page, selector: string, whole: string) =>
  page.evaluate(
    ([selector, whole]) => {
      const g = globalThis as unknown as Dom;
      const found: string[] = [];
      for (const el of g.document.querySelectorAll(selector)) {
        if (el.scrollWidth <= el.clientWidth) continue;
        const shown = el.closest(whole) ?? el;
        const caption = el.closest('table')?.querySelector('caption')?.textContent;
        const text = `${(shown.textContent ?? '').trim()} in ${caption ? `table "${caption}"` : 'the page'}`;
        if (!found.includes(text)) found.push(text);
      }
      return found;
    },
    [selector, whole] as const,
  );

/**
 * Every badge whose text is cut: Mantine's badge ends a text wider than itself with an ellipsis
 * ("A…" for ACTIVE).
 */
export const truncatedBadges = (page: Page) =>
  truncated(page, '.mantine-Badge-root, .mantine-Badge-label', '.mantine-Badge-root');

/**
 * Every decision reason (`[data-reason]`, its words) that is cut: it, or a box around it up to its
 * table cell or card, is narrower than its text and hides the rest (an ellipsis, a clip), as
 * "<CODE>: <the words shown>". A reason wraps instead, whole (docs/DASHBOARD.md, "Design system").
 */
export const truncatedReasons = (page: Page) =>
  page.evaluate(() => {
    const g = globalThis as unknown as Dom;
    const found: string[] = [];
    for (const reason of g.document.querySelectorAll('[data-reason]')) {
      for (let el: Box | null = reason; el && el.tagName !== 'BODY'; el = el.parentElement) {
        const { overflowX } = g.getComputedStyle(el);
        if (overflowX !== 'visible' && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) {
          found.push(`${reason.getAttribute('data-reason')}: ${(reason.textContent ?? '').trim()}`);
          break;
        }
        if (el.matches('td, th, section, [role="dialog"]')) break;
      }
    }
    return found;
  });

/** Every button whose label is cut: a flex row that squeezes a Mantine button clips its label ("Sign ou"). */
export const truncatedButtons = (page: Page) =>
  truncated(page, '.mantine-Button-label', '.mantine-Button-root');

/**
 * The wallet authorization request the page shows (as a QR code and as a link, the same request in
 * both), once it is shown: what the test wallet is then given to answer.
 */
export async function shownAuthorizationRequest(page: Page): Promise<string> {
  const shown = page.locator('[data-authorization-request]');
  await shown.waitFor();
  await page.getByRole('img', { name: 'QR code of the wallet authorization request' }).waitFor();
  const request = (await shown.getAttribute('data-authorization-request'))!;
  expect(request).toMatch(/^openid4vp:\/\/\?client_id=/);
  expect(await page.getByRole('link', { name: 'open the wallet' }).getAttribute('href')).toBe(request);
  return request;
}
