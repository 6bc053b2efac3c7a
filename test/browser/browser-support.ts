import { existsSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * What the dashboard's browser tests share: Debian's chromium launched as test/browser/dashboard.test.ts
 * launches it, a tab that records console and page errors, the development sign-in, and axe-core.
 */
export const CHROMIUM = '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);
export const ROOT = path.resolve(__dirname, '../..');
export const ARTIFACTS = path.join(ROOT, 'test-artifacts/dashboard');
const AXE = require.resolve('axe-core/axe.min.js');

export const SUBJECT = (role: string) => `dashboard:${role.replace('tenant_', '')}`;

/** Browser-side globals, typed here (the repository's tsconfig has no DOM library). */
type BrowserGlobals = {
  sessionStorage: { getItem(k: string): string | null };
  axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> };
};

/** The signed-in tab's bearer token (evaluate it in the page). */
export const sessionToken = () =>
  JSON.parse((globalThis as unknown as BrowserGlobals).sessionStorage.getItem('mandate-dashboard-session')!)
    .token as string;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
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

/** A fresh tab (its own sessionStorage) that records every console error and page error. */
export async function openPage(browser: Browser): Promise<{ page: Page; errors: string[] }> {
  // bypassCSP: axe-core is injected as an inline script, which the dashboard's CSP rightly refuses.
  const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${page.url()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`${page.url()}: ${e.message}`));
  return { page, errors };
}

export async function devSignIn(page: Page, baseUrl: string, tenantId: string, subject: string) {
  await page.goto(`${baseUrl}/dashboard/`);
  await page.getByRole('heading', { name: 'Development sign-in' }).waitFor();
  await page.getByRole('region', { name: 'Development sign-in' }).getByLabel('Tenant id').fill(tenantId);
  await page.getByRole('button', { name: 'List subjects' }).click();
  await page.getByRole('button', { name: `Sign in as ${subject}` }).click();
  await page.locator('nav[aria-label="Areas"] a').first().waitFor();
}

export async function operatorSignIn(page: Page, baseUrl: string, operatorToken: string) {
  await page.goto(`${baseUrl}/dashboard/sign-in`);
  await page.getByRole('heading', { name: 'Development sign-in' }).waitFor();
  await page.getByLabel('Operator token').fill(operatorToken);
  await page.getByRole('button', { name: 'Sign in as operator' }).click();
  await page.locator('nav[aria-label="Areas"] a').first().waitFor();
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
