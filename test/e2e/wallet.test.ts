import { decodeJwt } from 'jose';
import {
  DEFAULT_TEST_ISSUER_SEED,
  createTestPidIssuer,
  randomPerson,
  type TestPidIssuer,
  answerAuthorizationRequest,
  MISBEHAVIOUR_REASONS,
  type Misbehaviour,
} from '@mandate/test-wallet';
import { apiClient, eventually, startStack, type Stack } from '../support/stack';

/**
 * Identity-verified mandates end to end on the five-process stack: a session, the test wallet
 * answering through the gateway, the mandate binding the verification inside its signed fields,
 * and verify's min_assurance. The TEST PID issuer is trusted (never in production).
 */
describe('wallet (OpenID4VP) end to end: identity-verified mandates', () => {
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;
  let issuer: TestPidIssuer;
  let auth: string;
  let tenantId: string;

  beforeAll(async () => {
    stack = await startStack(
      {
        // The wallet's public calls share the per-client-IP onboarding bucket; every test client is 127.0.0.1.
        gateway: { PLAN_OVERRIDES: JSON.stringify({ onboarding: { rate: 1000, burst: 1000 } }) },
        identity: { LOG_LEVEL: 'info' },
        all: { LOG_LEVEL: 'info' },
      },
      // No WALLET_* here: the defaults `npm run start:services` sets (public URL from the gateway's
      // port, a generated subject secret, the TEST issuer trusted, the gateway trusting the wallet's
      // sign-in tokens) are what this suite runs on.
      { localWallet: true },
    );
    api = apiClient(stack.gateway.url);
    issuer = await createTestPidIssuer({ seed: DEFAULT_TEST_ISSUER_SEED });
    const res = await api('POST', '/v1/platform/tenants', {
      auth: stack.operatorToken,
      body: { name: 'Acme', plan: 'enterprise' },
    });
    expect(res.status).toBe(201);
    tenantId = res.body.tenant.id;
    auth = `${res.body.tenant.id}:${res.body.api_key.api_key}`;
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  }, 30_000);

  const person = randomPerson();

  async function verification(misbehave?: Misbehaviour) {
    const created = await api('POST', '/v1/identity-verifications', { auth, body: { purpose: 'mandate' } });
    expect(created.status).toBe(201);
    const answer = await answerAuthorizationRequest(created.body.authorization_request, {
      issuer,
      misbehave,
      person,
    });
    const session = await api('GET', `/v1/identity-verifications/${created.body.id}`, { auth });
    return { id: created.body.id as string, answer, session: session.body };
  }

  const mandate = (principal: unknown) =>
    api('POST', '/v1/mandates', {
      auth,
      body: { principal, delegate: 'agent_bob', scope: { actions: ['payments:create'] } },
    });

  it('when the test wallet answers, then the mandate carries `verified` under its signature and verify honours min_assurance', async () => {
    const { id, answer, session } = await verification();
    expect(answer.status).toBe(200);
    expect(session).toMatchObject({
      status: 'VERIFIED',
      assurance: 'HIGH',
      issuer: 'https://test-pid-issuer.invalid',
      claims: {
        family_name: person.family_name,
        given_name: person.given_name,
        birth_date: person.birth_date,
      },
    });
    expect(Object.keys(session.claims)).toHaveLength(3);

    const created = await mandate({ id: 'user_alice', type: 'person', verification_id: id });
    expect(created.status).toBe(201);
    const verified = {
      method: 'openid4vp',
      assurance: 'HIGH',
      verification_id: id,
      issuer: 'https://test-pid-issuer.invalid',
      subject_id: session.subject_id,
      claims_digest: session.claims_digest,
      verified_at: session.verified_at,
    };
    // The principal's name is the verified one (given, family), never the request's.
    const name = `${person.given_name} ${person.family_name}`;
    expect(created.body.principal).toEqual({ id: 'user_alice', type: 'person', name, verified });
    // The signature's payload is the canonical JSON of the immutable fields: `verified` is in it.
    expect((decodeJwt(created.body.signature.jws) as { principal: unknown }).principal).toEqual(
      created.body.principal,
    );

    const verify = (mandate_id: string) =>
      api('POST', '/v1/verify', {
        auth,
        body: { mandate_id, action: 'payments:create', min_assurance: 'HIGH' },
      });
    expect((await verify(created.body.id)).body).toMatchObject({ decision: 'ALLOW', reason: 'OK' });
    const plain = await mandate('user_carol');
    expect(plain.status).toBe(201);
    expect((await verify(plain.body.id)).body).toMatchObject({
      decision: 'DENY',
      reason: 'PRINCIPAL_NOT_VERIFIED',
    });

    // One mandate per verification.
    const again = await mandate({ id: 'user_alice', verification_id: id });
    expect(again.status).toBe(409);

    // Events: a digest, never a claim (the mandate's own events carry its principal's name, nothing
    // else of the claims); and no claim value in any process's log.
    const events = await eventually(async () => {
      const res = await api('GET', `/v1/events?limit=100&type=IDENTITY_VERIFIED`, { auth });
      return res.status === 200 && res.body.data.length > 0 ? res.body.data : undefined;
    });
    expect(events[0].data).toMatchObject({ claims_digest: session.claims_digest, assurance: 'HIGH' });
    const identityEvents = (await api('GET', '/v1/events?limit=100', { auth })).body.data.filter(
      (e: { type: string }) => !e.type.startsWith('MANDATE_'),
    );
    const everything = JSON.stringify(identityEvents);
    expect(JSON.stringify((await api('GET', '/v1/events?limit=100', { auth })).body)).not.toContain(
      person.birth_date,
    );
    const logs = [stack.gateway, ...Object.values(stack.services)].map((p) => p.output.join('')).join('\n');
    for (const value of [person.family_name, person.given_name]) {
      expect(everything).not.toContain(value);
      expect(logs).not.toContain(value);
    }
  });

  it("when a mandate names its verified principal as someone else (Mallory's verification, Alice's name), then 400, nothing is created, and the verification still binds under the verified name", async () => {
    const { id, answer } = await verification();
    expect(answer.status).toBe(200);
    const forged = await mandate({ id: 'ceo_alice', name: 'Alice Example (CEO)', verification_id: id });
    expect(forged).toMatchObject({
      status: 400,
      body: { error: 'BAD_REQUEST', message: 'principal.name does not match the verified identity' },
    });
    expect(JSON.stringify(forged.body)).not.toContain(person.family_name);
    const listed = await api('GET', '/v1/mandates?principal_id=ceo_alice', { auth });
    expect(listed.body.data).toEqual([]);
    // Unused: without a name, the mandate takes the verified one.
    const honest = await mandate({ id: 'ceo_alice', verification_id: id });
    expect(honest.status).toBe(201);
    expect(honest.body.principal.name).toBe(`${person.given_name} ${person.family_name}`);
  });

  it.each(MISBEHAVIOUR_REASONS)(
    'when the test wallet misbehaves (%s), then the session is FAILED with %s and binds no mandate',
    async (misbehave, reason) => {
      const { id, answer, session } = await verification(misbehave);
      expect(answer.status).toBe(400);
      expect(session).toMatchObject({ status: 'FAILED', reason, claims: null });
      const res = await mandate({ id: 'user_mallory', verification_id: id });
      expect(res.status).toBe(409);
    },
  );

  it('when the test wallet replays its answer, then the replay is ALREADY_ANSWERED', async () => {
    const { answer, session } = await verification('replay');
    expect(answer.status).toBe(200);
    expect(answer.replay?.status).toBe(400);
    expect(session.status).toBe('VERIFIED');
  });

  it('when a person signs in with the wallet, then the wallet: subject acts by its role assignment in that tenant only: a viewer reads, cannot create, and another tenant is 401 even once it gives the subject a role', async () => {
    const started = await api('POST', '/v1/identity-verifications/sign-in', {
      body: { tenant_id: tenantId },
    });
    expect(started.status).toBe(201);
    const id = started.body.id as string;
    const pollToken = started.body.poll_token as string;
    const answer = await answerAuthorizationRequest(started.body.authorization_request, { issuer, person });
    expect(answer.status).toBe(200);
    const polled = await api('POST', `/v1/identity-verifications/${id}/poll`, {
      body: { poll_token: pollToken },
    });
    expect(polled.body).toMatchObject({ status: 'VERIFIED', assurance: 'HIGH' });

    const token = await api('POST', `/v1/identity-verifications/${id}/token`, {
      body: { poll_token: pollToken },
    });
    expect(token.status).toBe(200);
    const subject = token.body.subject_id as string;
    expect(subject).toMatch(/^wallet:/);
    expect(subject).toBe(polled.body.subject_id);
    // Once only.
    const again = await api('POST', `/v1/identity-verifications/${id}/token`, {
      body: { poll_token: pollToken },
    });
    expect(again.status).toBe(409);

    const jwt = token.body.access_token as string;
    const asWallet = (method: string, path: string, tenant: string, body?: unknown) =>
      api(method, path, { auth: jwt, headers: { 'x-tenant-id': tenant }, body });

    // Another tenant: the token was issued for tenantId, so it is refused there, before and after
    // that tenant gives the subject a role (its own sign-in would give the person a token for it).
    const other = await api('POST', '/v1/platform/tenants', {
      auth: stack.operatorToken,
      body: { name: 'Other' },
    });
    const otherId = other.body.tenant.id as string;
    const refused = { error: 'UNAUTHORIZED', message: 'This token was issued for another tenant' };
    expect((await asWallet('GET', '/v1/mandates', otherId)).body).toEqual(refused);
    const otherRole = await api('POST', `/v1/tenants/${otherId}/role-assignments`, {
      auth: `${otherId}:${other.body.api_key.api_key}`,
      body: { subject_id: subject, roles: ['tenant_admin'] },
    });
    expect(otherRole.status).toBe(201);
    const me = await asWallet('GET', '/v1/me', otherId);
    expect({ status: me.status, body: me.body }).toEqual({ status: 401, body: refused });

    const assigned = await api('POST', `/v1/tenants/${tenantId}/role-assignments`, {
      auth,
      body: { subject_id: subject, roles: ['tenant_viewer'] },
    });
    expect(assigned.status).toBe(201);
    expect((await asWallet('GET', '/v1/mandates', tenantId)).status).toBe(200);
    expect((await asWallet('GET', '/v1/me', tenantId)).body).toMatchObject({
      tenant_id: tenantId,
      subject_id: subject,
    });
    const denied = await asWallet('POST', '/v1/mandates', tenantId, {
      principal: 'user_x',
      delegate: 'agent_y',
    });
    expect(denied.status).toBe(403);
  });

  it('when every flow above has run, then no raw claim value appears in any event or any log line', async () => {
    const all = (await api('GET', '/v1/events?limit=100', { auth })).body.data as { type: string }[];
    // A mandate's own events carry the mandate, whose principal is named by the verified name (the
    // rule): the name, never the birth date. Every other event carries no claim at all.
    const events = JSON.stringify(all.filter((e) => !e.type.startsWith('MANDATE_')));
    expect(events).toContain('IDENTITY_VERIFICATION_FAILED');
    expect(JSON.stringify(all)).not.toContain(person.birth_date);
    const logs = [stack.gateway, ...Object.values(stack.services)].map((p) => p.output.join('')).join('\n');
    for (const value of [person.family_name, person.given_name, person.birth_date]) {
      expect(events).not.toContain(value);
      expect(logs).not.toContain(value);
    }
  });
});
