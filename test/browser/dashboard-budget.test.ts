import { eventually } from '../support/stack';
import {
  SUBJECT,
  WIDTHS,
  closeClean,
  dashboardForSuite,
  describeIfChromium,
  devSignIn,
  expectAccessible,
  horizontalOverflow,
  openPage,
} from './browser-support';

/**
 * A mandate's budget in the dashboard (docs/DASHBOARD.md "Budgets"): the bar of the current period
 * with its figures, the authorizations with a Void that asks first, and the create form's budget
 * fields, at a laptop's and a phone's width.
 */
describeIfChromium('dashboard: budgets', () => {
  const suite = dashboardForSuite({ tenantName: 'Budget Co' });
  const api = () => suite.api();

  /** A mandate of 500.00 EUR a month in Berlin with 100.00 captured (of a 120.00 hold) and 30.00 held. */
  async function spentMandate() {
    const created = await api()('POST', '/v1/mandates', {
      auth: suite.auth,
      body: {
        principal: 'user_alice',
        delegate: { id: 'agent_42', type: 'agent' },
        scope: {
          actions: ['payments:*'],
          constraints: { currency: 'EUR' },
          budget: { amount: 50_000, period: 'month', timezone: 'Europe/Berlin' },
        },
      },
    });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const hold = async (amount: number) => {
      const res = await api()('POST', `/v1/mandates/${id}/authorizations`, {
        auth: suite.auth,
        body: { action: 'payments:create', amount, currency: 'EUR' },
      });
      expect(res.status).toBe(201);
      return res.body.authorization.id as string;
    };
    const first = await hold(12_000);
    expect(
      (
        await api()('POST', `/v1/authorizations/${first}/capture`, {
          auth: suite.auth,
          body: { amount: 10_000 },
        })
      ).status,
    ).toBe(200);
    const held = await hold(3_000);
    return { id, held };
  }
  const authorization = async (id: string) =>
    (await api()('GET', `/v1/authorizations/${id}`, { auth: suite.auth })).body;

  it.each(WIDTHS)(
    'at $width px, when an admin opens a mandate with a budget, then the bar shows captured, held and available, and Void asks before it releases a hold',
    async (viewport) => {
      const { id, held } = await spentMandate();
      const tab = await openPage(suite.browser);
      const { page } = tab;
      await page.setViewportSize(viewport);
      await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_admin'));
      await page.goto(`${suite.stack.url}/dashboard/mandates/${id}`);
      await page.getByTestId('budget-bar').waitFor();
      const figure = (name: string) => page.getByTestId(`budget-${name}`).textContent();
      expect(await figure('captured')).toBe('€100.00');
      expect(await figure('held')).toBe('€30.00');
      expect(await figure('available')).toBe('€370.00');
      expect(await page.getByTestId('budget-bar').getAttribute('aria-label')).toBe(
        '€100.00 captured, €30.00 held, €370.00 available of €500.00',
      );
      // The period's end: this month in Berlin ends at local midnight of the 1st.
      expect(await figure('period-end')).toMatch(/^This period: \d{4}-\d\d-\d\d .* to \d{4}-\d\d-\d\d /);
      expect(await page.getByTestId('mandate-budget').textContent()).toBe('€500.00 a month (Europe/Berlin)');
      const rows = page.getByTestId('authorizations').locator('tbody tr');
      expect(await rows.count()).toBe(2);
      expect(await horizontalOverflow(page)).toBe(0);
      await expectAccessible(page, `budget-${viewport.width}`);

      // Void asks first: the dialog names the hold and what it releases; Cancel changes nothing.
      await page.getByRole('button', { name: `Void hold ${held}` }).click();
      const dialog = page.getByRole('dialog', { name: 'Void hold' });
      await dialog.waitFor();
      expect(await dialog.getByTestId('confirm-impact').textContent()).toContain(
        `€30.00 held by ${held} goes back to the budget`,
      );
      expect((await authorization(held)).status).toBe('HELD');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      expect((await authorization(held)).status).toBe('HELD');
      expect(await figure('held')).toBe('€30.00');

      await page.getByRole('button', { name: `Void hold ${held}` }).click();
      await dialog.getByRole('button', { name: 'Void hold' }).click();
      await dialog.waitFor({ state: 'detached' });
      await eventually(async () => ((await authorization(held)).status === 'VOIDED' ? true : undefined));
      await page.getByTestId('budget-available').getByText('€400.00').waitFor();
      expect(await figure('held')).toBe('€0.00');
      expect(await page.getByRole('button', { name: `Void hold ${held}` }).count()).toBe(0);
      await closeClean(tab);
    },
    120_000,
  );

  it('when the create form is given a budget, then a wrong timezone or a budget without its currency is refused in words, and a valid one is signed into the scope', async () => {
    const tab = await openPage(suite.browser);
    const { page } = tab;
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_admin'));
    await page.goto(`${suite.stack.url}/dashboard/mandates/new`);
    await page.getByLabel('Principal id').fill('user_bob');
    await page.getByLabel('Delegate id').fill('agent_7');
    await page.getByLabel('Actions (comma-separated)').fill('payments:create');
    await page.getByLabel('Budget per period (major units, in the currency above)').fill('2000');
    await page.getByLabel('Budget period', { exact: true }).selectOption('month');
    const submit = page.getByRole('button', { name: 'Create mandate' });
    await submit.click();
    await page.getByText('A budget needs its currency').waitFor();
    await page.getByLabel('Currency', { exact: true }).fill('EUR');
    await page.getByLabel('Timezone of the periods (IANA)').fill('Mars/Olympus');
    await submit.click();
    await page.getByText('"Mars/Olympus" is not an IANA timezone').waitFor();
    const none = await api()('GET', '/v1/mandates?principal_id=user_bob', { auth: suite.auth });
    expect(none.body.data).toEqual([]);

    await page.getByLabel('Timezone of the periods (IANA)').fill('Europe/Berlin');
    await submit.click();
    await page.getByTestId('created-budget').waitFor();
    expect(await page.getByTestId('created-budget').textContent()).toBe('€2,000.00 a month (Europe/Berlin)');
    const made = await api()('GET', '/v1/mandates?principal_id=user_bob', { auth: suite.auth });
    expect(made.body.data[0].scope.budget).toEqual({
      amount: 200_000,
      period: 'month',
      timezone: 'Europe/Berlin',
    });
    await closeClean(tab);
  }, 120_000);
});
