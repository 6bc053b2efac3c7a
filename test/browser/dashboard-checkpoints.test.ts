import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { verifyBundleText } from '../../packages/evidence-cli/src/verify';
import { README_MANDATE } from '../support/stack';
import {
  SUBJECT,
  closeClean,
  dashboardForSuite,
  describeIfChromium,
  devSignIn,
  expectAccessible,
  navAreas,
  openPage,
} from './browser-support';

/**
 * The audit page's signed checkpoints (docs/API.md#proving-the-log) in a real browser against
 * `npm start`'s in-process stack: the latest (tree size, root, time, key id), the list, and a
 * download that the offline checker takes as the auditor's kept checkpoint (`--checkpoint FILE`).
 */
describeIfChromium('dashboard: the audit log’s signed checkpoints', () => {
  const dashboard = dashboardForSuite({
    tenantName: 'Checkpoints Co',
    roles: ['tenant_operator', 'tenant_viewer', 'tenant_auditor'],
  });
  const asKey = (method: string, p: string) => dashboard.api()(method, p, { auth: dashboard.auth });

  async function openAs(role: string): Promise<{ page: Page; errors: string[] }> {
    const opened = await openPage(dashboard.browser);
    await devSignIn(opened.page, dashboard.stack.url, dashboard.tenantId, SUBJECT(role));
    return opened;
  }

  /** A mandate's evidence bundle as text (exporting signs a checkpoint covering its events). */
  async function exportBundle(mandateId: string): Promise<string> {
    const res = await asKey('GET', `/v1/mandates/${mandateId}/evidence`);
    expect(res.status).toBe(200);
    return res.text;
  }

  it('when an auditor opens the audit log, then the latest checkpoint shows with its size, root and key id, lists, and downloads as the file the checker proves a later bundle against', async () => {
    const created = await dashboard.api()('POST', '/v1/mandates', {
      auth: dashboard.auth,
      body: README_MANDATE,
    });
    expect(created.status).toBe(201);
    const mandateId = created.body.id as string;
    await exportBundle(mandateId);

    const opened = await openAs('tenant_auditor');
    const { page } = opened;
    await page.goto(`${dashboard.stack.url}/dashboard/audit`);
    await page.getByTestId('latest-checkpoint').waitFor();
    const size = Number((await page.getByTestId('checkpoint-size').innerText()).replace(/[^0-9]/g, ''));
    const root = (await page.getByTestId('checkpoint-root').innerText()).trim();
    const kid = (await page.getByTestId('checkpoint-kid').innerText()).trim();
    // What the page shows is a checkpoint the API serves, and its key is one of the JWKS.
    const listed = await asKey('GET', '/v1/audit/checkpoints?limit=100');
    const shown = (listed.body.data as { tree_size: number; root_hash: string }[]).find(
      (c) => c.tree_size === size,
    );
    expect(shown?.root_hash).toBe(root);
    const jwks = await asKey('GET', '/v1/.well-known/jwks.json');
    expect((jwks.body.keys as { kid: string }[]).map((k) => k.kid)).toContain(kid);
    await page
      .getByTestId('checkpoint-list')
      .getByRole('cell', { name: size.toLocaleString('en') })
      .first()
      .waitFor();

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: /^Download latest checkpoint/ }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`checkpoint-${size}.json`);
    const kept = JSON.parse(readFileSync((await download.path())!, 'utf8')) as { tree_size: number };
    expect(kept).toEqual(shown);

    // Later: the mandate is used, a new bundle (its checkpoint covers the new event); the kept file
    // proves the log only grew in between.
    const verified = await dashboard.api()('POST', '/v1/verify', {
      auth: dashboard.auth,
      body: { mandate_id: mandateId, action: 'payments:create', amount: 100, currency: 'EUR' },
    });
    expect(verified.status).toBe(200);
    let later = '';
    let to = size;
    for (let tries = 0; to === size && tries < 50; tries++) {
      if (tries > 0) await new Promise((r) => setTimeout(r, 200));
      later = await exportBundle(mandateId);
      to = (JSON.parse(later) as { checkpoint: { tree_size: number } }).checkpoint.tree_size;
    }
    expect(to).toBeGreaterThan(size);
    const proof = await asKey('GET', `/v1/audit/consistency-proof?from=${size}&to=${to}`);
    expect(proof.status).toBe(200);
    const results = await verifyBundleText(later, {
      trustedKeys: jwks.body.keys,
      keptCheckpoint: kept,
      consistency: proof.body,
    });
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results.find((r) => r.check === 'log consistency')?.ok).toBe(true);

    await expectAccessible(page, 'audit-checkpoints');
    await closeClean(opened);
  });

  it('when an operator opens the audit log, then the checkpoints show too; a viewer (no events:read) has no audit page', async () => {
    const operator = await openAs('tenant_operator');
    await operator.page.goto(`${dashboard.stack.url}/dashboard/audit`);
    await operator.page.getByTestId('latest-checkpoint').waitFor();
    await closeClean(operator);

    const viewer = await openAs('tenant_viewer');
    await viewer.page.goto(`${dashboard.stack.url}/dashboard/`);
    await viewer.page.locator('nav[aria-label="Areas"] a').first().waitFor();
    expect(await navAreas(viewer.page)).not.toContain('audit');
    await closeClean(viewer);
  });
});
