import { README_MANDATE } from '../support/stack';
import {
  SUBJECT,
  closeClean,
  dashboardForSuite,
  describeIfChromium,
  devSignIn,
  expectAccessible,
  openPage,
} from './browser-support';

/**
 * The verification playground in AuthZEN's words (docs/DASHBOARD.md, docs/API.md#authzen) in a real
 * browser against `npm start`: an evaluation from the same fields (ALLOW with verify's decision_id,
 * then DENY), its curl and @mandate/client code, and a batch of actions under deny_on_first_deny.
 */
describeIfChromium('dashboard: the verification playground speaks AuthZEN', () => {
  const suite = dashboardForSuite({ tenantName: 'AuthZEN Co', roles: ['tenant_operator'] });

  it('when an operator-role subject evaluates in AuthZEN mode and sends a batch, then the page shows each decision and reason as the API gives them', async () => {
    const mandate = await suite.api()('POST', '/v1/mandates', { auth: suite.auth, body: README_MANDATE });
    expect(mandate.status).toBe(201);
    const mandateId: string = mandate.body.id;
    const verify = await suite.api()('POST', '/v1/verify', {
      auth: suite.auth,
      body: {
        mandate_id: mandateId,
        action: 'payments:create',
        amount: 1200,
        currency: 'EUR',
        delegate_id: 'agent_42',
      },
    });
    expect(verify.body.decision).toBe('ALLOW');

    const opened = await openPage(suite.browser);
    const { page } = opened;
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_operator'));
    await page.goto(`${suite.stack.url}/dashboard/verify`);
    const authzen = page.getByRole('button', { name: 'AuthZEN API' });
    await authzen.click();
    expect(await authzen.getAttribute('aria-pressed')).toBe('true');

    await page.getByLabel('Mandate id').fill(mandateId);
    await page.getByLabel('Action').fill('payments:create');
    await page.getByLabel('Amount (minor units)').fill('1200');
    await page.getByLabel('Currency').fill('EUR');
    await page.getByLabel('Subject id').fill('agent_42');
    expect(await page.getByTestId('playground-endpoint').textContent()).toBe(
      'Sends POST /access/v1/evaluation.',
    );
    await page.getByRole('button', { name: 'Evaluate' }).click();
    await page.getByTestId('decision').waitFor();
    expect({
      decision: await page.getByTestId('decision').textContent(),
      authzen: await page.getByTestId('authzen-decision').textContent(),
      reason: await page.getByTestId('reason').textContent(),
      decisionId: await page.getByTestId('decision-id').textContent(),
    }).toEqual({ decision: 'ALLOW', authzen: 'true', reason: 'OK', decisionId: verify.body.decision_id });
    const curl = await page.getByTestId('curl').textContent();
    expect(curl).toContain(`${suite.stack.url}/access/v1/evaluation \\`);
    expect(curl).toContain(`"resource":{"type":"mandate","id":"${mandateId}"}`);
    expect(await page.getByTestId('client-call').textContent()).toContain(
      'client.authzen.accessEvaluation({',
    );

    await page.getByLabel('Amount (minor units)').fill('999999');
    await page.getByRole('button', { name: 'Evaluate' }).click();
    await page.getByTestId('authzen-decision').getByText('false').waitFor();
    expect(await page.getByTestId('reason').textContent()).toBe('AMOUNT_EXCEEDS_LIMIT');
    // The same words as the Mandate API's answer (docs/API.md#reasons-in-words), from the evaluation's context.
    const said = "Amount 9,999.99 EUR exceeds the mandate's limit of 500.00 EUR per call.";
    await page.getByTestId('reason-words').filter({ hasText: said }).waitFor();
    expect(await page.getByTestId('reason-words').textContent()).toBe(said);

    // The batch: the form's fields are the defaults, one item per action; the second is denied and stops it.
    await page.getByLabel('Amount (minor units)').fill('1200');
    await page
      .getByLabel('Batch items, one a line')
      .fill('payments:create\ntransfers:create\npayments:refund');
    await page.getByLabel('Evaluations semantic').selectOption('deny_on_first_deny');
    await page.getByRole('button', { name: 'Send batch' }).click();
    await page.getByTestId('batch-count').waitFor();
    expect({
      count: await page.getByTestId('batch-count').textContent(),
      decisions: await page.locator('[data-testid^="batch-decision-"]').allTextContents(),
      reasons: await page.locator('[data-testid^="batch-reason-"]').allTextContents(),
    }).toEqual({
      count: '2 of 3 items answered (deny_on_first_deny).',
      decisions: ['ALLOW', 'DENY'],
      reasons: ['OK', 'ACTION_NOT_PERMITTED'],
    });
    expect(await page.getByTestId('batch-curl').textContent()).toContain('/access/v1/evaluations \\');
    expect(await page.getByTestId('batch-client-call').textContent()).toContain(
      'client.authzen.accessEvaluations({',
    );
    await expectAccessible(page, 'tenant_operator-verify-authzen');
    await closeClean(opened);
  }, 120_000);
});
