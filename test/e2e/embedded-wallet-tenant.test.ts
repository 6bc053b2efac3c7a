import {
  DEFAULT_TEST_ISSUER_SEED,
  createTestPidIssuer,
  randomPerson,
  answerAuthorizationRequest,
} from '@mandate/test-wallet';
import { startEmbedded, type EmbeddedStack } from '../../scripts/embedded';
import { apiClient, createTenant, freePort } from '../support/stack';

/**
 * A wallet sign-in token is valid in the tenant it was issued for only, through the gateway of
 * `npm start` (identity's own wallet sign-in issuer, the TEST PID issuer trusted): another tenant
 * refuses it, even once that tenant gives the same wallet subject a role.
 */
describe('embedded mode (npm start): a wallet sign-in token in another tenant', () => {
  let stack: EmbeddedStack;
  beforeAll(async () => {
    // A fixed port: the wallet's request object names the gateway's URL before it listens.
    const port = String(await freePort());
    stack = await startEmbedded(
      {
        PORT: port,
        PATH: process.env.PATH,
        // The wallet's public calls share the per-client-IP onboarding bucket.
        PLAN_OVERRIDES: JSON.stringify({ onboarding: { rate: 1000, burst: 1000 } }),
      },
      true,
    );
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('when a wallet sign-in token of tenant A calls with X-Tenant-Id of tenant B, then 401, also after B gives the subject a role; in A, then 200', async () => {
    const api = apiClient(stack.url);
    const operator = { gateway: { url: stack.url }, operatorToken: stack.operatorToken };
    const [a, b] = [await createTenant(operator, { name: 'A' }), await createTenant(operator, { name: 'B' })];
    const issuer = await createTestPidIssuer({ seed: DEFAULT_TEST_ISSUER_SEED });

    const started = await api('POST', '/v1/identity-verifications/sign-in', {
      body: { tenant_id: a.tenant.id },
    });
    expect(started.status).toBe(201);
    const answer = await answerAuthorizationRequest(started.body.authorization_request, {
      issuer,
      person: randomPerson(),
    });
    expect(answer.status).toBe(200);
    const token = await api('POST', `/v1/identity-verifications/${started.body.id}/token`, {
      body: { poll_token: started.body.poll_token },
    });
    expect(token.status).toBe(200);
    const subject = token.body.subject_id as string;
    for (const { tenant, auth } of [a, b]) {
      const assigned = await api('POST', `/v1/tenants/${tenant.id}/role-assignments`, {
        auth,
        body: { subject_id: subject, roles: ['tenant_admin'] },
      });
      expect(assigned.status).toBe(201);
    }

    const me = (tenantId: string) =>
      api('GET', '/v1/me', { auth: token.body.access_token, headers: { 'x-tenant-id': tenantId } });
    const inB = await me(b.tenant.id);
    expect({ status: inB.status, body: inB.body }).toEqual({
      status: 401,
      body: { error: 'UNAUTHORIZED', message: 'This token was issued for another tenant' },
    });
    const inA = await me(a.tenant.id);
    expect({ status: inA.status, body: inA.body }).toMatchObject({
      status: 200,
      body: { tenant_id: a.tenant.id, subject_id: subject },
    });
  });
});
