import {
  answerAuthorizationRequest,
  createTestPidIssuer,
  DEFAULT_TEST_ISSUER_SEED,
  randomPerson,
} from '@mandate/test-wallet';
import { freePort } from '../support/stack';
import {
  SUBJECT,
  allAxeViolations,
  closeClean,
  dashboardForSuite,
  describeIfChromium,
  devSignIn,
  openPage,
  shownAuthorizationRequest,
} from './browser-support';

/**
 * Creating a mandate with the principal's identity verified (issue 28, work item 4) in a real
 * browser: the form opens a wallet session, shows its QR code and waits; the project's test wallet
 * answers the very request the page shows (TEST PID issuer, trusted by `npm start`); the mandate
 * is then created carrying `principal.verified`. The wallet needs a fixed PORT: its request object
 * names the gateway's URL before the gateway listens.
 */
describeIfChromium('dashboard: create a mandate with identity verification', () => {
  let port = 0;
  beforeAll(async () => {
    port = await freePort();
  });
  const suite = dashboardForSuite({
    tenantName: 'Verified Co',
    // Read when the suite's beforeAll starts the stack, after the port above is chosen.
    get env() {
      return { PORT: String(port) };
    },
  });

  it('when an admin creates a mandate with identity verification, then the page shows the wallet QR and waits; once the wallet answers, the mandate is created with the verified principal', async () => {
    const issuer = await createTestPidIssuer({ seed: DEFAULT_TEST_ISSUER_SEED });
    const person = randomPerson();
    const opened = await openPage(suite.browser);
    const { page } = opened;
    await devSignIn(page, suite.stack.url, suite.tenantId, SUBJECT('tenant_admin'));
    await page.goto(`${suite.stack.url}/dashboard/mandates/new`);
    await page.getByRole('heading', { level: 1, name: 'Create mandate' }).waitFor();
    await page.getByLabel('Principal id').fill('user_verified');
    await page.getByLabel('Delegate id').fill('agent_verified');
    await page.getByLabel('Actions (comma-separated)').fill('payments:create');
    await page.getByLabel(/Verify the principal's identity with a wallet first/).check();
    await page.getByRole('button', { name: 'Verify identity and create' }).click();

    const request = await shownAuthorizationRequest(page);
    await page.getByText(/^Waiting for the answer…/).waitFor();
    expect(await allAxeViolations(page)).toEqual([]);
    // Nothing is created while the wallet has not answered.
    const before = await suite.api()('GET', '/v1/mandates?delegate_id=agent_verified', { auth: suite.auth });
    expect(before.body.data).toEqual([]);

    expect((await answerAuthorizationRequest(request, { issuer, person })).status).toBe(200);
    await page.getByTestId('created-mandate').waitFor({ timeout: 15_000 });
    const name = `${person.given_name} ${person.family_name}`;
    expect(await page.getByTestId('created-principal').textContent()).toBe(
      `user_verified, ${name} (identity verified, HIGH)`,
    );
    expect(await page.getByTestId('created-state').textContent()).toBe('ACTIVE');

    const list = await suite.api()('GET', '/v1/mandates?delegate_id=agent_verified', { auth: suite.auth });
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0].principal).toMatchObject({
      id: 'user_verified',
      type: 'person',
      name,
      verified: { method: 'openid4vp', assurance: 'HIGH', issuer: 'https://test-pid-issuer.invalid' },
    });
    await closeClean(opened);
  }, 120_000);
});
