import { newId, systemClock, type CallerContext, type Clock } from '@mandate/shared/core';
import { callerFor, testTokens } from '@mandate/shared/testing';
import type { WalletVerifier } from '../src/identity-verifications/identity-verification';
import { createVerifierIdentity } from '../src/identity-verifications/request';
import { createSignInIssuer } from '../src/identity-verifications/sign-in-tokens';
import { legacySubjectId } from '../src/identity-verifications/check-presentation';
import { assignRoles } from '../src/role-assignments/role-assignments';
import { createLocalJWKSet, jwtVerify } from 'jose';
import {
  createTestPidIssuer,
  randomPerson,
  type PersonData,
  type TestPidIssuer,
  buildDirectPostResponse,
  MISBEHAVIOUR_REASONS,
  resolveRequestObject,
  type Misbehaviour,
} from '@mandate/test-wallet';
import { identityStoreAdapters, startIdentity, system } from './helpers';

type Service = Awaited<ReturnType<typeof startIdentity>>;

/** A clock the tests move; starts at the real time (the wallet signs with the real time). */
function movableClock(): Clock & { advance(ms: number): void } {
  let offset = 0;
  return { now: () => new Date(Date.now() + offset), advance: (ms) => void (offset += ms) };
}

/** What a VERIFIED session shows of `person` to a reader allowed to see its claims. */
const verifiedView = (person: PersonData) => ({
  status: 'VERIFIED',
  subject_id: expect.stringMatching(/^wallet:/),
  claims_digest: expect.stringMatching(/^[0-9a-f]{64}$/),
  claims: { family_name: person.family_name, given_name: person.given_name, birth_date: person.birth_date },
});

describe.each(identityStoreAdapters())(
  'identity: identity verifications (component, $name store)',
  (adapter) => {
    let svc: Service;
    let issuer: TestPidIssuer;
    let wallet: WalletVerifier;
    const clock = movableClock();

    beforeAll(async () => {
      issuer = await createTestPidIssuer();
      // localhost: the verifier certificate names the host of the URLs the wallet is sent to.
      wallet = {
        identity: await createVerifierIdentity('localhost'),
        publicUrl: '',
        trustedIssuers: [issuer.trustEntry],
        subjectSecret: 'a-test-subject-secret-of-at-least-32-chars',
        fetchStatusList: () => issuer.statusListJwt(),
        signIn: await createSignInIssuer('http://localhost', 'mandate-api'),
      };
      svc = await startIdentity({ wallet, clock }, adapter);
      wallet.publicUrl = svc.server.url.replace('127.0.0.1', 'localhost');
    });
    afterAll(async () => {
      await svc.stop();
    });

    async function tenant(): Promise<{ tenantId: string; caller: CallerContext }> {
      const t = await svc.createTenant();
      return {
        tenantId: t.tenantId,
        caller: callerFor(t.tenantId, { actor: { type: 'api_key', key_id: t.keyId } }),
      };
    }

    async function start(caller: CallerContext, purpose: 'mandate' | 'sign_in' = 'mandate') {
      const res = await svc.call('POST', '/v1/identity-verifications', { caller, body: { purpose } });
      expect(res.status).toBe(201);
      return res.body as {
        id: string;
        request_uri: string;
        authorization_request: string;
        poll_token?: string;
      };
    }

    /** What the gateway does for the wallet's public calls: a system caller, no tenant. */
    const publicHeaders = async () => ({ 'x-internal-token': await testTokens.mint(system, 'identity') });

    async function requestObject(requestUri: string) {
      const res = await fetch(requestUri.replace('localhost', '127.0.0.1'), {
        headers: await publicHeaders(),
      });
      return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
    }

    async function post(responseUri: string, form: Record<string, string>) {
      const res = await fetch(responseUri.replace('localhost', '127.0.0.1'), {
        method: 'POST',
        headers: { ...(await publicHeaders()), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    }

    /** The test wallet answering a session, misbehaving if asked. */
    async function walletAnswer(requestUri: string, misbehave?: Misbehaviour, person?: PersonData) {
      const { text } = await requestObject(requestUri);
      const request = await resolveRequestObject(text);
      const form = await buildDirectPostResponse(request, { issuer, misbehave, person });
      return { request, form, answer: await post(request.responseUri, form) };
    }

    /** A fresh tenant's session, started, and its request object as the wallet resolves it. */
    async function startedSession() {
      const { caller } = await tenant();
      const created = await start(caller);
      const { text } = await requestObject(created.request_uri);
      return { caller, created, request: await resolveRequestObject(text) };
    }

    const get = (caller: CallerContext, id: string) =>
      svc.call('GET', `/v1/identity-verifications/${id}`, { caller });

    const eventsOf = (id: string) => svc.publisher.events.filter((e) => e.resource?.id === id);

    it('when the honest test wallet answers, then the session is VERIFIED, HIGH, with exactly the three claims', async () => {
      const { tenantId, caller } = await tenant();
      const created = await start(caller);
      expect(created).toEqual({
        id: expect.stringMatching(/^idv_[0-9a-z]{26}$/),
        purpose: 'mandate',
        status: 'PENDING',
        expires_at: expect.any(String),
        authorization_request: expect.stringMatching(
          /^openid4vp:\/\/\?client_id=x509_san_dns%3Alocalhost&request_uri=/,
        ),
        request_uri: `${wallet.publicUrl}/v1/identity-verifications/${created.id}/request`,
      });
      const ttl = Date.parse((created as unknown as { expires_at: string }).expires_at) - Date.now();
      expect(ttl).toBeGreaterThan(4 * 60_000);
      expect(ttl).toBeLessThanOrEqual(5 * 60_000);

      const fetched = await requestObject(created.request_uri);
      expect(fetched.status).toBe(200);
      expect(fetched.type).toMatch(/^application\/oauth-authz-req\+jwt/);

      const person = randomPerson();
      const request = await resolveRequestObject(fetched.text);
      const form = await buildDirectPostResponse(request, { issuer, person });
      const answer = await post(request.responseUri, form);
      expect(answer).toEqual({ status: 200, body: {} });

      const res = await get(caller, created.id);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        ...verifiedView(person),
        id: created.id,
        tenant_id: tenantId,
        assurance: 'HIGH',
        reason: null,
        issuer: issuer.issuer,
        consumed_by: null,
      });
      expect(Object.keys(res.body.claims).sort()).toEqual(['birth_date', 'family_name', 'given_name']);

      // Events: started and verified, a digest and never a claim value.
      const events = eventsOf(created.id);
      expect(events.map((e) => e.type)).toEqual(['IDENTITY_VERIFICATION_STARTED', 'IDENTITY_VERIFIED']);
      expect(events[1]!.data).toMatchObject({ assurance: 'HIGH', claims_digest: res.body.claims_digest });
      const serialised = JSON.stringify(events);
      for (const value of [person.family_name, person.given_name, person.birth_date])
        expect(serialised).not.toContain(value);

      // The request object is not served once answered.
      expect((await requestObject(created.request_uri)).status).toBe(404);
    });

    it.each(MISBEHAVIOUR_REASONS)(
      'when the test wallet misbehaves (%s), then 400 names %s and the session is FAILED with it',
      async (misbehave, reason) => {
        const { caller } = await tenant();
        const created = await start(caller);
        const { answer } = await walletAnswer(created.request_uri, misbehave);
        expect(answer.status).toBe(400);
        expect(answer.body).toEqual({ error: 'BAD_REQUEST', message: `Presentation rejected: ${reason}` });
        const res = await get(caller, created.id);
        expect(res.body).toMatchObject({
          status: 'FAILED',
          reason,
          assurance: null,
          claims: null,
          subject_id: null,
        });
        const failed = eventsOf(created.id).find((e) => e.type === 'IDENTITY_VERIFICATION_FAILED');
        expect(failed?.data).toEqual({ verification_id: created.id, purpose: 'mandate', reason });
        // Nothing to bind: the session cannot become a mandate's.
        const consume = await svc.call('POST', `/internal/v1/identity-verifications/${created.id}/consume`, {
          caller,
          body: { mandate_id: newId('mdt') },
        });
        expect(consume.status).toBe(409);
      },
    );

    it('when the request object is fetched a second time, then 404: it is served once (the link is a capability)', async () => {
      const { caller } = await tenant();
      const created = await start(caller);
      const first = await requestObject(created.request_uri);
      expect(first.status).toBe(200);
      const second = await requestObject(created.request_uri);
      expect({ status: second.status, body: JSON.parse(second.text) }).toEqual({
        status: 404,
        body: { error: 'NOT_FOUND', message: 'Identity verification not found' },
      });
      // The session itself is untouched: the wallet that fetched it still answers.
      expect((await get(caller, created.id)).body).toMatchObject({ status: 'PENDING' });
      const request = await resolveRequestObject(first.text);
      expect(
        (await post(request.responseUri, await buildDirectPostResponse(request, { issuer }))).status,
      ).toBe(200);
    });

    it('when the request object is fetched concurrently, then exactly one fetch gets it', async () => {
      const { caller } = await tenant();
      const created = await start(caller);
      const fetches = await Promise.all(Array.from({ length: 4 }, () => requestObject(created.request_uri)));
      expect(fetches.map((f) => f.status).sort()).toEqual([200, 404, 404, 404]);
    });

    it('when an answer without the state reaches an expired session, then STATE_MISMATCH and nothing is written', async () => {
      const { caller, created, request } = await startedSession();
      clock.advance(5 * 60_000 + 1);
      try {
        const forgeries: Record<string, string>[] = [
          { error: 'access_denied' },
          { error: 'access_denied', state: 'x' },
        ];
        for (const forged of forgeries) {
          expect((await post(request.responseUri, forged)).body.message).toBe(
            'Presentation rejected: STATE_MISMATCH',
          );
        }
      } finally {
        clock.advance(-(5 * 60_000 + 1));
      }
      expect((await get(caller, created.id)).body).toMatchObject({ status: 'PENDING', reason: null });
      expect(eventsOf(created.id).map((e) => e.type)).toEqual(['IDENTITY_VERIFICATION_STARTED']);
    });

    it('when the same answer is sent twice (replay), then the second is ALREADY_ANSWERED and the session stays VERIFIED', async () => {
      const { caller } = await tenant();
      const created = await start(caller);
      const { request, form, answer } = await walletAnswer(created.request_uri);
      expect(answer.status).toBe(200);
      const again = await post(request.responseUri, form);
      expect(again).toEqual({
        status: 400,
        body: { error: 'BAD_REQUEST', message: 'Presentation rejected: ALREADY_ANSWERED' },
      });
      expect((await get(caller, created.id)).body.status).toBe('VERIFIED');
    });

    it('when two answers race, then exactly one passes the guarded write', async () => {
      const { created, request } = await startedSession();
      const form = await buildDirectPostResponse(request, { issuer });
      const answers = await Promise.all([
        post(request.responseUri, form),
        post(request.responseUri, form),
        post(request.responseUri, form),
      ]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400]);
      expect(eventsOf(created.id).filter((e) => e.type !== 'IDENTITY_VERIFICATION_STARTED')).toHaveLength(1);
    });

    it('when the session is older than 5 minutes, then the answer is SESSION_EXPIRED', async () => {
      const { caller, created, request } = await startedSession();
      const form = await buildDirectPostResponse(request, { issuer });
      clock.advance(5 * 60_000 + 1);
      try {
        const answer = await post(request.responseUri, form);
        expect(answer.body.message).toBe('Presentation rejected: SESSION_EXPIRED');
        expect((await get(caller, created.id)).body).toMatchObject({
          status: 'FAILED',
          reason: 'SESSION_EXPIRED',
        });
      } finally {
        clock.advance(-(5 * 60_000 + 1));
      }
    });

    it.each([
      ['another state', (state: string): Record<string, string> => ({ state: `${state}x` })],
      ['no state', (): Record<string, string> => ({})],
    ])(
      'when an answer carries %s, then 400 STATE_MISMATCH, the session stays PENDING and the wallet can still answer',
      async (_label, stateOf) => {
        const { caller, created, request } = await startedSession();
        const form = await buildDirectPostResponse(request, { issuer });
        for (const forged of [
          { vp_token: form.vp_token!, ...stateOf(request.state) },
          { error: 'access_denied', ...stateOf(request.state) },
        ]) {
          const answer = await post(request.responseUri, forged);
          expect(answer).toEqual({
            status: 400,
            body: { error: 'BAD_REQUEST', message: 'Presentation rejected: STATE_MISMATCH' },
          });
        }
        expect((await get(caller, created.id)).body).toMatchObject({ status: 'PENDING', reason: null });
        expect(eventsOf(created.id).map((e) => e.type)).toEqual(['IDENTITY_VERIFICATION_STARTED']);
        expect((await post(request.responseUri, form)).status).toBe(200);
        expect((await get(caller, created.id)).body.status).toBe('VERIFIED');
      },
    );

    it('when the user declines in the wallet, then the session is FAILED with WALLET_DECLINED', async () => {
      const { caller, created, request } = await startedSession();
      const answer = await post(request.responseUri, { error: 'access_denied', state: request.state });
      expect(answer.status).toBe(400);
      expect((await get(caller, created.id)).body).toMatchObject({
        status: 'FAILED',
        reason: 'WALLET_DECLINED',
      });
    });

    describe('who reads the claims', () => {
      /** A VERIFIED mandate session of a fresh tenant, and a caller of that tenant with `permissions`. */
      async function verifiedSession() {
        const { tenantId, caller } = await tenant();
        const created = await start(caller);
        const person = randomPerson();
        expect((await walletAnswer(created.request_uri, undefined, person)).answer.status).toBe(200);
        const as = (actor: CallerContext['actor'], permissions: string[]) =>
          callerFor(tenantId, { actor, permissions });
        return { created, person, as };
      }
      const key = { type: 'api_key', key_id: 'key_01jtestkey0000000000000000' } as const;
      const user = { type: 'user', subject_id: 'dashboard:reader' } as const;

      it.each([
        ['a key with mandates:write', key, ['mandates:read', 'mandates:write']],
        ['a JWT tenant_admin (tenant:write)', user, ['tenant:read', 'tenant:write', 'mandates:read']],
      ])('when %s reads a VERIFIED session, then it sees the claims', async (_label, actor, permissions) => {
        const { created, person, as } = await verifiedSession();
        const res = await get(as(actor, permissions), created.id);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject(verifiedView(person));
      });

      it.each([
        ['a key with mandates:read only', key, ['mandates:read', 'verify', 'events:read', 'tenants:admin']],
        ['a JWT tenant_viewer', user, ['tenant:read', 'mandates:read']],
        ['a JWT tenant_auditor', user, ['tenant:read', 'mandates:read', 'events:read']],
      ])(
        'when %s reads a VERIFIED session, then it sees the status only: no claims, digest or subject',
        async (_label, actor, permissions) => {
          const { created, person, as } = await verifiedSession();
          const res = await get(as(actor, permissions), created.id);
          expect(res.status).toBe(200);
          expect(res.body).toMatchObject({ id: created.id, status: 'VERIFIED', assurance: 'HIGH' });
          for (const field of ['claims', 'claims_digest', 'subject_id'])
            expect(res.body).not.toHaveProperty(field);
          const text = JSON.stringify(res.body);
          for (const value of [person.family_name, person.given_name, person.birth_date])
            expect(text).not.toContain(value);
        },
      );

      it('when a tenant credential reads a sign-in session by id, then 404: only its poll_token reads it', async () => {
        const { caller } = await tenant();
        const signIn = await start(caller, 'sign_in');
        const admin = { ...caller, permissions: [...caller.permissions, 'tenant:write'] };
        expect(await get(admin, signIn.id)).toMatchObject({
          status: 404,
          body: { error: 'NOT_FOUND', message: 'Identity verification not found' },
        });
        const poll = await svc.call('POST', `/v1/identity-verifications/${signIn.id}/poll`, {
          caller: system,
          body: { poll_token: signIn.poll_token },
        });
        expect(poll).toMatchObject({ status: 200, body: { id: signIn.id, status: 'PENDING' } });
      });
    });

    it('when another tenant reads a session, then 404', async () => {
      const a = await tenant();
      const b = await tenant();
      const created = await start(a.caller);
      expect((await get(b.caller, created.id)).status).toBe(404);
    });

    describe('the list (Trust operations)', () => {
      const list = (caller: CallerContext, query = '') =>
        svc.call('GET', `/v1/identity-verifications${query}`, { caller });

      it('when a tenant lists its sessions, then newest first, filtered by status and purpose, without claims, subject or digest', async () => {
        const { tenantId, caller } = await tenant();
        const first = await start(caller);
        const signIn = await start(caller, 'sign_in');
        const verified = await start(caller);
        const person = randomPerson();
        expect((await walletAnswer(verified.request_uri, undefined, person)).answer.status).toBe(200);

        const all = await list(caller);
        expect(all.status).toBe(200);
        expect(all.body.data.map((v: { id: string }) => v.id)).toEqual([verified.id, signIn.id, first.id]);
        expect(all.body).toMatchObject({ has_more: false, next_cursor: null });
        expect(all.body.data[0]).toEqual({
          id: verified.id,
          tenant_id: tenantId,
          purpose: 'mandate',
          status: 'VERIFIED',
          created_at: expect.any(String),
          expires_at: expect.any(String),
          answered_at: expect.any(String),
          reason: null,
          assurance: 'HIGH',
          issuer: expect.any(String),
          verified_at: expect.any(String),
          consumed_by: null,
        });
        const text = JSON.stringify(all.body);
        for (const value of [
          person.family_name,
          person.given_name,
          person.birth_date,
          'claims',
          'subject_id',
        ])
          expect(text).not.toContain(value);

        expect((await list(caller, '?status=VERIFIED')).body.data.map((v: { id: string }) => v.id)).toEqual([
          verified.id,
        ]);
        expect((await list(caller, '?purpose=sign_in')).body.data.map((v: { id: string }) => v.id)).toEqual([
          signIn.id,
        ]);
        expect(
          (await list(caller, '?status=PENDING&purpose=mandate')).body.data.map((v: { id: string }) => v.id),
        ).toEqual([first.id]);
      });

      it('when the list is paged, then each session appears once across the pages', async () => {
        const { caller } = await tenant();
        const ids = [(await start(caller)).id, (await start(caller)).id, (await start(caller)).id];
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const res = await list(caller, `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
          expect(res.status).toBe(200);
          seen.push(...res.body.data.map((v: { id: string }) => v.id));
          cursor = res.body.next_cursor as string | null;
        } while (cursor);
        expect(seen).toEqual([...ids].reverse());
      });

      it('when another tenant lists, then it sees none of these sessions', async () => {
        const a = await tenant();
        const b = await tenant();
        await start(a.caller);
        expect((await list(b.caller)).body).toEqual({ data: [], has_more: false, next_cursor: null });
      });

      it.each([
        ['an unknown status', '?status=EXPIRED'],
        ['an unknown purpose', '?purpose=login'],
        ['an unknown parameter', '?claims=1'],
        ['a limit above 100', '?limit=101'],
      ])('when the query has %s, then 400 in the envelope', async (_label, query) => {
        const { caller } = await tenant();
        const res = await list(caller, query);
        expect(res).toMatchObject({
          status: 400,
          body: { error: 'BAD_REQUEST', message: expect.any(String) },
        });
      });
    });

    it('when a VERIFIED session binds a mandate, then once only, never for another tenant', async () => {
      const a = await tenant();
      const b = await tenant();
      const created = await start(a.caller);
      await walletAnswer(created.request_uri);
      const consume = (caller: CallerContext) =>
        svc.call('POST', `/internal/v1/identity-verifications/${created.id}/consume`, {
          caller,
          body: { mandate_id: newId('mdt') },
        });
      expect((await consume(b.caller)).status).toBe(404);
      const first = await consume(a.caller);
      expect(first.status).toBe(200);
      expect(first.body).toEqual({
        principal_name: expect.any(String),
        verification_id: created.id,
        assurance: 'HIGH',
        issuer: issuer.issuer,
        subject_id: expect.stringMatching(/^wallet:/),
        claims_digest: expect.stringMatching(/^[0-9a-f]{64}$/),
        verified_at: expect.any(String),
      });
      expect((await consume(a.caller)).status).toBe(409);
    });

    describe("the principal's name comes from the verified claims", () => {
      async function verifiedFor(person: PersonData) {
        const { caller } = await tenant();
        const created = await start(caller);
        expect((await walletAnswer(created.request_uri, undefined, person)).answer.status).toBe(200);
        const consume = (body: Record<string, unknown>) =>
          svc.call('POST', `/internal/v1/identity-verifications/${created.id}/consume`, {
            caller,
            body: { mandate_id: newId('mdt'), ...body },
          });
        return { consume };
      }

      it('when the mandate names the principal differently, then 400 without the verified name, and the verification stays unused', async () => {
        const person = randomPerson();
        const { consume } = await verifiedFor(person);
        const refused = await consume({ principal_name: 'Alice Example (CEO)' });
        expect(refused).toMatchObject({
          status: 400,
          body: { error: 'BAD_REQUEST', message: 'principal.name does not match the verified identity' },
        });
        const bound = await consume({});
        expect(bound.status).toBe(200);
        expect(bound.body.principal_name).toBe(`${person.given_name} ${person.family_name}`);
      });

      it('when the mandate names the principal as verified, then it binds, answering the verified name', async () => {
        const person = randomPerson();
        const { consume } = await verifiedFor(person);
        const name = `${person.given_name} ${person.family_name}`;
        expect(await consume({ principal_name: name })).toMatchObject({
          status: 200,
          body: { principal_name: name },
        });
      });
    });

    it('when a VERIFIED session is older than 10 minutes, then it no longer binds a mandate', async () => {
      const { caller } = await tenant();
      const created = await start(caller);
      await walletAnswer(created.request_uri);
      clock.advance(10 * 60_000 + 1);
      try {
        const res = await svc.call('POST', `/internal/v1/identity-verifications/${created.id}/consume`, {
          caller,
          body: { mandate_id: newId('mdt') },
        });
        expect(res.status).toBe(409);
      } finally {
        clock.advance(-(10 * 60_000 + 1));
      }
    });

    it('when a sign-in starts publicly, then only its poll_token reads it', async () => {
      const { tenantId } = await tenant();
      const res = await svc.call('POST', '/v1/identity-verifications/sign-in', {
        caller: system,
        body: { tenant_id: tenantId },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        purpose: 'sign_in',
        status: 'PENDING',
        poll_token: expect.stringMatching(/^idp_/),
      });
      const poll = (poll_token: string) =>
        svc.call('POST', `/v1/identity-verifications/${res.body.id}/poll`, {
          caller: system,
          body: { poll_token },
        });
      expect((await poll('idp_wrong')).status).toBe(404);
      expect((await poll(res.body.poll_token)).body).toMatchObject({
        status: 'PENDING',
        tenant_id: tenantId,
      });
      await walletAnswer(res.body.request_uri);
      const verified = (await poll(res.body.poll_token)).body;
      expect(verified).toMatchObject({ status: 'VERIFIED', assurance: 'HIGH' });

      // The token exchange: once, an ES256 JWT of the service's own issuer, sub = the wallet subject.
      const exchange = (poll_token: string) =>
        svc.call('POST', `/v1/identity-verifications/${res.body.id}/token`, {
          caller: system,
          body: { poll_token },
        });
      expect((await exchange('idp_wrong')).status).toBe(404);
      const token = await exchange(res.body.poll_token);
      expect(token.status).toBe(200);
      expect(token.body).toMatchObject({
        token_type: 'Bearer',
        expires_in: 900,
        subject_id: verified.subject_id,
        tenant_id: tenantId,
      });
      const jwks = await svc.call('GET', '/v1/wallet/jwks', { caller: system });
      const { payload, protectedHeader } = await jwtVerify(
        token.body.access_token,
        createLocalJWKSet(jwks.body),
        { issuer: 'http://localhost', audience: 'mandate-api' },
      );
      expect(protectedHeader.alg).toBe('ES256');
      expect(`wallet:${payload.sub}`).toBe(verified.subject_id);
      expect(payload.exp! - payload.iat!).toBe(900);
      expect((await exchange(res.body.poll_token)).status).toBe(409);
      // Unknown tenant: 404.
      const unknown = await svc.call('POST', '/v1/identity-verifications/sign-in', {
        caller: system,
        body: { tenant_id: newId('tnt') },
      });
      expect(unknown.status).toBe(404);
    });

    // docs/DECISIONS.md#pairwise-wallet-subjects: ids are per tenant; a role held under the id of
    // before (one for every tenant) still signs its holder in, so no one is locked out.
    it('when a person signs in to two tenants, then the subject ids differ; a role held under the old shared id keeps that id', async () => {
      const person = randomPerson();
      const signIn = async (tenantId: string) => {
        const res = await svc.call('POST', '/v1/identity-verifications/sign-in', {
          caller: system,
          body: { tenant_id: tenantId },
        });
        await walletAnswer(res.body.request_uri, undefined, person);
        const token = await svc.call('POST', `/v1/identity-verifications/${res.body.id}/token`, {
          caller: system,
          body: { poll_token: res.body.poll_token },
        });
        expect(token.status).toBe(200);
        return token.body.subject_id as string;
      };
      const a = await tenant();
      const b = await tenant();
      const inA = await signIn(a.tenantId);
      const inB = await signIn(b.tenantId);
      expect(inA).toMatch(/^wallet:/);
      expect(inB).not.toBe(inA);

      const c = await tenant();
      const shared = legacySubjectId(issuer.issuer, person, wallet.subjectSecret);
      await assignRoles(svc.deps, c.tenantId, { subjectId: shared, roles: ['tenant_viewer'] });
      expect(await signIn(c.tenantId)).toBe(shared);
    });
  },
);

describe('identity: identity verification not configured', () => {
  it('when no wallet verifier is configured, then starting one answers 503', async () => {
    const svc = await startIdentity({ clock: systemClock });
    try {
      const t = await svc.createTenant();
      const res = await svc.call('POST', '/v1/identity-verifications', {
        caller: callerFor(t.tenantId),
        body: { purpose: 'mandate' },
      });
      expect(res.status).toBe(503);
    } finally {
      await svc.stop();
    }
  });
});
