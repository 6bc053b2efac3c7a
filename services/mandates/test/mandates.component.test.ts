import { compactVerify, createLocalJWKSet, decodeProtectedHeader } from 'jose';
import { AppError, canonicalJson, fixedClock, newId } from '@mandate/shared/core';
import { auditEventSchema } from '@mandate/shared/events';
import { callService, callerFor } from '@mandate/shared/testing';
import { IMMUTABLE_FIELDS } from '../src/domain/mandate';
import type { IdentityVerifications } from '../src/domain/mandates';
import { buildMandate, failingSigner, mandateStoreAdapters, mandatesForSuite, startService } from './support';

const FIXED_START = '2031-03-01T10:00:00.000Z';

describe.each(mandateStoreAdapters())('mandates service (in-process, $name store)', (adapter) => {
  const svc = mandatesForSuite({}, adapter);
  const { call } = svc;
  const create = (tenantId: string, overrides: Record<string, unknown> = {}) =>
    call(tenantId, 'POST', '/v1/mandates', { principal: 'alice', delegate: 'agent-7', ...overrides });
  const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

  describe('internal token audience (docs/API.md, "Hardening")', () => {
    const digest = 'ab'.repeat(32);

    it('when a token minted for verify is shown, then /internal/v1/signatures and the public routes answer 401', async () => {
      const tenantId = newId('tnt');
      const created = await create(tenantId);
      expect(created.status).toBe(201);
      const asVerify = { caller: callerFor(tenantId), audience: 'verify' as const };
      const signed = await callService(svc.url, 'POST', '/internal/v1/signatures', {
        ...asVerify,
        body: { digest },
      });
      expect(signed).toMatchObject({
        status: 401,
        body: { error: 'UNAUTHORIZED', message: 'Invalid internal token' },
      });
      expect((await callService(svc.url, 'GET', `/v1/mandates/${created.body.id}`, asVerify)).status).toBe(
        401,
      );
      expect((await callService(svc.url, 'GET', '/v1/mandates', asVerify)).status).toBe(401);
      const posted = await callService(svc.url, 'POST', '/v1/mandates', {
        ...asVerify,
        body: { principal: 'alice', delegate: 'agent-7' },
      });
      expect(posted.status).toBe(401);
    });

    it('when the token is minted for mandates, then the same calls succeed', async () => {
      const tenantId = newId('tnt');
      const asMandates = { caller: callerFor(tenantId), audience: 'mandates' as const };
      const signed = await callService(svc.url, 'POST', '/internal/v1/signatures', {
        ...asMandates,
        body: { digest },
      });
      expect(signed.status).toBe(200);
      const posted = await callService(svc.url, 'POST', '/v1/mandates', {
        ...asMandates,
        body: { principal: 'alice', delegate: 'agent-7' },
      });
      expect(posted.status).toBe(201);
      expect((await callService(svc.url, 'GET', `/v1/mandates/${posted.body.id}`, asMandates)).status).toBe(
        200,
      );
    });
  });

  describe('POST /v1/mandates', () => {
    it('when created with string shorthands only, then 201 with defaults, ACTIVE, version 1 and a signature', async () => {
      const tenantId = newId('tnt');
      const res = await create(tenantId);
      expect(res).toMatchObject({ status: 201 });
      // buildMandate's defaults are what the service gives a mandate created from shorthands.
      expect(res.body).toEqual(
        buildMandate({
          id: expect.stringMatching(/^mdt_[0-9a-z]{26}$/),
          tenant_id: tenantId,
          principal: { id: 'alice' },
          delegate: { id: 'agent-7' },
          created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          updated_at: res.body.created_at,
          signature: { alg: 'ES256', kid: svc.deps.signer.kid, jws: expect.any(String) },
          status: {
            status_list: { idx: expect.any(Number), uri: expect.stringContaining('/v1/status-lists/') },
          },
        }),
      );
    });

    it('when a create is sent again under its Idempotency-Key (the gateway lost its record in a crash), then the first mandate is the answer and nothing is created twice; another key creates another', async () => {
      const tenantId = newId('tnt');
      const send = (key: string) =>
        callService(svc.url, 'POST', '/v1/mandates', {
          caller: callerFor(tenantId),
          body: { principal: 'alice', delegate: 'agent-7' },
          headers: { 'idempotency-key': key },
        });
      const first = await send('create-1');
      expect(first.status).toBe(201);
      expect(await send('create-1')).toMatchObject({ status: 201, body: first.body });
      const other = await send('create-2');
      expect(other.status).toBe(201);
      expect(other.body.id).not.toBe(first.body.id);
      const listed = await call(tenantId, 'GET', '/v1/mandates');
      expect(listed.body.data.map((m: { id: string }) => m.id).sort()).toEqual(
        [first.body.id, other.body.id].sort(),
      );
    });

    it('when another create is sent under an Idempotency-Key that already made a mandate (the gateway lost its record), then it is a CONFLICT that creates nothing', async () => {
      const tenantId = newId('tnt');
      const send = (delegate: string) =>
        callService(svc.url, 'POST', '/v1/mandates', {
          caller: callerFor(tenantId),
          body: { principal: 'alice', delegate },
          headers: { 'idempotency-key': 'create-once' },
        });
      const first = await send('agent-7');
      expect(first.status).toBe(201);
      expect(await send('agent-8')).toMatchObject({
        status: 409,
        body: {
          error: 'CONFLICT',
          message: 'This Idempotency-Key was already used with a different request',
        },
      });
      // The first request is still answered with its mandate.
      expect(await send('agent-7')).toMatchObject({ status: 201, body: first.body });
      const listed = await call(tenantId, 'GET', '/v1/mandates');
      expect(listed.body.data.map((m: { id: string }) => m.id)).toEqual([first.body.id]);
    });

    it('when created with every field, then they are kept and timestamps are normalised to UTC with milliseconds', async () => {
      const tenantId = newId('tnt');
      const validFrom = '2020-01-01T01:00:00+01:00';
      const expiresAt = new Date(Date.now() + 86_400_000);
      const body = {
        principal: { id: 'org-1', type: 'organization', name: 'Acme GmbH' },
        delegate: { id: 'svc-9', type: 'service' },
        scope: {
          actions: ['payments:create', 'payments:*'],
          resources: ['acct:123/*'],
          constraints: { max_amount: 10000, currency: 'EUR' },
        },
        valid_from: validFrom,
        expires_at: expiresAt.toISOString(),
        metadata: { order: 'A-1' },
      };
      const res = await call(tenantId, 'POST', '/v1/mandates', body);
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        principal: body.principal,
        delegate: body.delegate,
        scope: body.scope,
        valid_from: '2020-01-01T00:00:00.000Z',
        expires_at: expiresAt.toISOString(),
        metadata: body.metadata,
      });
    });

    it('when two identical creates are sent, then two mandates exist', async () => {
      const tenantId = newId('tnt');
      const [a, b] = [await create(tenantId), await create(tenantId)];
      expect(a.body.id).not.toBe(b.body.id);
    });

    it.each([
      ['principal is missing', { principal: undefined }, 'principal is required'],
      ['delegate is missing', { delegate: undefined }, 'delegate is required'],
      ['principal has the wrong type', { principal: 5 }, 'principal must be an object'],
      [
        'principal.id is too long',
        { principal: 'x'.repeat(257) },
        'principal.id must be at most 256 characters',
      ],
      [
        'principal.type is unknown',
        { principal: { id: 'a', type: 'robot' } },
        'principal.type must be one of: person, organization, agent, service',
      ],
      ['a top-level field is unknown', { colour: 'red' }, 'colour is not allowed'],
      [
        'a principal field is unknown',
        { principal: { id: 'a', email: 'a@b.c' } },
        'principal.email is not allowed',
      ],
      ['a scope field is unknown', { scope: { actions: ['*'], extra: true } }, 'scope.extra is not allowed'],
      [
        'a constraints field is unknown',
        { scope: { constraints: { limit: 1 } } },
        'scope.constraints.limit is not allowed',
      ],
      ['scope.actions is empty', { scope: { actions: [] } }, 'scope.actions must have at least 1 item(s)'],
      [
        'scope.resources is empty (it must not mean "anything")',
        { scope: { actions: ['*'], resources: [] } },
        'scope.resources must have at least 1 item(s)',
      ],
      [
        'an action is malformed',
        { scope: { actions: ['pay ments'] } },
        'scope.actions.0: must be an action like payments:create, payments:* or *',
      ],
      [
        'max_amount is negative',
        { scope: { constraints: { max_amount: -1 } } },
        'scope.constraints.max_amount: must be a non-negative integer (minor units)',
      ],
      [
        'max_amount is fractional',
        { scope: { constraints: { max_amount: 1.5 } } },
        'scope.constraints.max_amount: must be a non-negative integer (minor units)',
      ],
      [
        'currency is lowercase',
        { scope: { constraints: { currency: 'eur' } } },
        'scope.constraints.currency: must be a 3-letter uppercase ISO 4217 code',
      ],
      [
        'expires_at is not a timestamp',
        { expires_at: 'tomorrow' },
        'expires_at: must be an ISO 8601 timestamp, e.g. 2026-11-21T12:00:00.000Z',
      ],
      [
        'expires_at is in the past',
        { expires_at: '2001-01-01T00:00:00.000Z' },
        'expires_at must be in the future',
      ],
      ['metadata value is not a string', { metadata: { a: 1 } }, 'metadata.a must be a string'],
      [
        'metadata has 21 keys',
        { metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])) },
        'metadata: must have at most 20 keys',
      ],
    ])('when %s, then 400 naming the field', async (_case, overrides, message) => {
      const tenantId = newId('tnt');
      const res = await create(tenantId, overrides);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { error: 'BAD_REQUEST', message },
      });
      const list = await call(tenantId, 'GET', '/v1/mandates');
      expect(list.body.data).toEqual([]);
    });

    it('when expires_at is not after valid_from, then 400', async () => {
      const at = inAnHour();
      const res = await create(newId('tnt'), { valid_from: at, expires_at: at });
      expect(res.body).toEqual({ error: 'BAD_REQUEST', message: 'expires_at must be after valid_from' });
    });

    it('when the body is missing, then 400', async () => {
      const res = await call(newId('tnt'), 'POST', '/v1/mandates');
      expect(res.body).toEqual({ error: 'BAD_REQUEST', message: 'body is required' });
    });

    it('when a mandate is created, then MANDATE_CREATED carries the mandate, the caller and the resource', async () => {
      const tenantId = newId('tnt');
      const res = await create(tenantId);
      const events = svc.publisher.ofResource(res.body.id);
      expect(events).toHaveLength(1);
      expect(auditEventSchema.parse(events[0])).toMatchObject({
        type: 'MANDATE_CREATED',
        tenant_id: tenantId,
        resource: { type: 'mandate', id: res.body.id },
        actor: { type: 'api_key' },
        request_id: 'req_test',
        data: res.body,
      });
    });
  });

  describe('signature', () => {
    it('when checked with the JWKS, then the JWS verifies over the canonical immutable fields with the kid in its header', async () => {
      const tenantId = newId('tnt');
      const { body: mandate } = await create(tenantId, {
        principal: { id: 'p', type: 'person', name: 'Zoë' },
        scope: { actions: ['payments:*'], constraints: { max_amount: 1, currency: 'USD' } },
        expires_at: inAnHour(),
      });
      const jwks = await call(tenantId, 'GET', '/v1/.well-known/jwks.json');
      expect(jwks.status).toBe(200);
      expect(jwks.body.keys).toEqual([
        expect.objectContaining({
          kty: 'EC',
          crv: 'P-256',
          kid: mandate.signature.kid,
          alg: 'ES256',
          use: 'sig',
        }),
      ]);
      expect(jwks.body.keys[0]).not.toHaveProperty('d');

      expect(decodeProtectedHeader(mandate.signature.jws)).toEqual({
        alg: 'ES256',
        kid: mandate.signature.kid,
      });
      const { payload } = await compactVerify(mandate.signature.jws, createLocalJWKSet(jwks.body));
      // The immutable fields and, signed with them, the status-list entry (docs/DECISIONS.md, "Status lists (v3)").
      const immutable = Object.fromEntries([...IMMUTABLE_FIELDS, 'status'].map((f) => [f, mandate[f]]));
      expect(new TextDecoder().decode(payload)).toBe(canonicalJson(immutable));
    });

    it('when the mandate changes state, then the signature still verifies (it covers only immutable fields)', async () => {
      const tenantId = newId('tnt');
      const { body: created } = await create(tenantId);
      const { body: revoked } = await call(tenantId, 'POST', `/v1/mandates/${created.id}/revoke`);
      expect(revoked.signature).toEqual(created.signature);
    });

    it('when signing fails, then 503 and nothing is stored or published', async () => {
      const broken = await startService({ signer: failingSigner() });
      try {
        const tenantId = newId('tnt');
        const res = await callService(broken.url, 'POST', '/v1/mandates', {
          caller: callerFor(tenantId),
          body: { principal: 'a', delegate: 'b' },
        });
        expect({ status: res.status, body: res.body }).toEqual({
          status: 503,
          body: { error: 'SERVICE_UNAVAILABLE', message: 'Signing service unavailable' },
        });
        const list = await callService(broken.url, 'GET', '/v1/mandates', { caller: callerFor(tenantId) });
        expect(list.body.data).toEqual([]);
        expect(broken.publisher.events).toEqual([]);
      } finally {
        await broken.stop();
      }
    });
  });

  describe('GET /v1/mandates/:id', () => {
    it('when the owner reads it, then 200 with the same mandate', async () => {
      const tenantId = newId('tnt');
      const { body: created } = await create(tenantId);
      const res = await call(tenantId, 'GET', `/v1/mandates/${created.id}`);
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: created });
    });

    it("when tenant B reads tenant A's mandate, then 404 exactly as for an absent one", async () => {
      const { body: created } = await create(newId('tnt'));
      const other = await call(newId('tnt'), 'GET', `/v1/mandates/${created.id}`);
      const absent = await call(newId('tnt'), 'GET', `/v1/mandates/${newId('mdt')}`);
      expect({ status: other.status, body: other.body }).toEqual({
        status: 404,
        body: { error: 'NOT_FOUND', message: 'Mandate not found' },
      });
      expect(absent.body).toEqual(other.body);
    });

    it("when tenant B tries a lifecycle call on tenant A's mandate, then 404 and nothing changes", async () => {
      const tenantA = newId('tnt');
      const { body: created } = await create(tenantA);
      const res = await call(newId('tnt'), 'POST', `/v1/mandates/${created.id}/revoke`);
      expect(res.status).toBe(404);
      expect((await call(tenantA, 'GET', `/v1/mandates/${created.id}`)).body.state).toBe('ACTIVE');
    });

    it('when the internal route is called (verify service), then it answers like the public get, scoped by the token tenant', async () => {
      const tenantId = newId('tnt');
      const { body: created } = await create(tenantId);
      const res = await call(tenantId, 'GET', `/internal/v1/mandates/${created.id}`);
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: created });
      expect((await call(newId('tnt'), 'GET', `/internal/v1/mandates/${created.id}`)).status).toBe(404);
    });
  });

  describe('GET /v1/mandates', () => {
    it('when filtering by state, principal_id and delegate_id, then only matching mandates come back, newest first', async () => {
      const tenantId = newId('tnt');
      const a = (await create(tenantId, { principal: 'alice', delegate: 'bot-1' })).body;
      const b = (await create(tenantId, { principal: 'bob', delegate: 'bot-1' })).body;
      const c = (await create(tenantId, { principal: 'alice', delegate: 'bot-2' })).body;
      await call(tenantId, 'POST', `/v1/mandates/${b.id}/suspend`);
      const ids = async (query: string) => {
        const res = await call(tenantId, 'GET', `/v1/mandates${query}`);
        expect(res.status).toBe(200);
        return res.body.data.map((m: { id: string }) => m.id);
      };
      expect(await ids('')).toEqual([c.id, b.id, a.id]);
      expect(await ids('?principal_id=alice')).toEqual([c.id, a.id]);
      expect(await ids('?delegate_id=bot-1')).toEqual([b.id, a.id]);
      expect(await ids('?state=SUSPENDED')).toEqual([b.id]);
      expect(await ids('?state=ACTIVE&principal_id=alice&delegate_id=bot-2')).toEqual([c.id]);
      expect(await ids('?state=REVOKED')).toEqual([]);
    });

    it('when q is part of a party id or name in another case, then its mandates come back, in this tenant only', async () => {
      const tenantId = newId('tnt');
      const a = (await create(tenantId, { delegate: { id: 'agent:CheckoutBot-7', name: 'Checkout' } })).body;
      const b = (await create(tenantId, { principal: { id: 'usr_1', name: 'Zoë Ángel' } })).body;
      const c = (await create(tenantId, { delegate: 'a.b*c' })).body;
      await create(newId('tnt'), { delegate: 'agent:checkoutbot-8' });
      const ids = async (q: string) => {
        const res = await call(tenantId, 'GET', `/v1/mandates?q=${encodeURIComponent(q)}`);
        expect({ status: res.status }).toEqual({ status: 200 });
        return res.body.data.map((m: { id: string }) => m.id);
      };
      expect(await ids('checkoutbot')).toEqual([a.id]);
      expect(await ids('ZOË á')).toEqual([b.id]);
      expect(await ids('B*C')).toEqual([c.id]);
      expect(await ids('.*')).toEqual([]);
      expect(await ids('AGENT')).toEqual([b.id, a.id]);
    });

    it('when paging with limit and cursor, then every mandate appears once and the last page has no cursor', async () => {
      const tenantId = newId('tnt');
      const created: string[] = [];
      for (let i = 0; i < 5; i++) created.push((await create(tenantId)).body.id);
      const first = await call(tenantId, 'GET', '/v1/mandates?limit=2');
      expect(first.body).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
      const second = await call(tenantId, 'GET', `/v1/mandates?limit=2&cursor=${first.body.next_cursor}`);
      const third = await call(tenantId, 'GET', `/v1/mandates?limit=2&cursor=${second.body.next_cursor}`);
      expect(third.body).toMatchObject({ has_more: false, next_cursor: null });
      const seen = [first, second, third].flatMap((r) => r.body.data.map((m: { id: string }) => m.id));
      expect(seen).toEqual([...created].reverse());
    });

    it('when asked order=asc with include_total, then pages come oldest first, each once, every page with the total of the filters', async () => {
      const tenantId = newId('tnt');
      const created: string[] = [];
      for (let i = 0; i < 5; i++) created.push((await create(tenantId)).body.id);
      await create(tenantId, { principal: 'bob' });
      const pages = [];
      let cursor = '';
      for (let guard = 0; guard < 5; guard++) {
        const res = await call(
          tenantId,
          'GET',
          `/v1/mandates?principal_id=alice&order=asc&include_total=true&limit=2${cursor}`,
        );
        pages.push({
          status: res.status,
          total: res.body.total,
          ids: res.body.data.map((m: { id: string }) => m.id),
        });
        if (!res.body.next_cursor) break;
        cursor = `&cursor=${res.body.next_cursor}`;
      }
      expect(pages).toEqual([
        { status: 200, total: 5, ids: created.slice(0, 2) },
        { status: 200, total: 5, ids: created.slice(2, 4) },
        { status: 200, total: 5, ids: created.slice(4) },
      ]);
      const without = await call(tenantId, 'GET', '/v1/mandates?limit=1');
      expect(Object.keys(without.body).sort()).toEqual(['data', 'has_more', 'next_cursor']);
    });

    it('when a cursor issued for one order is sent with the other, then 400 in the error envelope', async () => {
      const tenantId = newId('tnt');
      for (let i = 0; i < 3; i++) await create(tenantId);
      const asc = await call(tenantId, 'GET', '/v1/mandates?order=asc&limit=1');
      const desc = await call(tenantId, 'GET', '/v1/mandates?limit=1');
      const mismatched = [
        await call(tenantId, 'GET', `/v1/mandates?limit=1&cursor=${asc.body.next_cursor}`),
        await call(tenantId, 'GET', `/v1/mandates?order=desc&limit=1&cursor=${asc.body.next_cursor}`),
        await call(tenantId, 'GET', `/v1/mandates?order=asc&limit=1&cursor=${desc.body.next_cursor}`),
      ];
      expect(mismatched.map((r) => ({ status: r.status, body: r.body }))).toEqual([
        {
          status: 400,
          body: {
            error: 'BAD_REQUEST',
            message: 'cursor was issued for order=asc; ask with that order, or without the cursor',
          },
        },
        {
          status: 400,
          body: {
            error: 'BAD_REQUEST',
            message: 'cursor was issued for order=asc; ask with that order, or without the cursor',
          },
        },
        {
          status: 400,
          body: {
            error: 'BAD_REQUEST',
            message: 'cursor was issued for order=desc; ask with that order, or without the cursor',
          },
        },
      ]);
    });

    it.each([
      ['?state=PENDING', 'state must be one of: ACTIVE, SUSPENDED, REVOKED, EXPIRED'],
      ['?limit=0', 'limit must be at least 1'],
      ['?limit=101', 'limit must be at most 100'],
      ['?cursor=garbage', 'cursor is invalid'],
      ['?sort=asc', 'sort is not allowed'],
      ['?order=up', 'order must be one of: asc, desc'],
      ['?include_total=yes', 'include_total must be one of: true, false'],
      ['?q=', 'q must not be empty'],
      [`?q=${'x'.repeat(201)}`, 'q must be at most 200 characters'],
      ['?q=a%0Ab', 'q: must contain printable characters only (no control, format or bidi characters)'],
      ['?q=a&q=b', 'q must be a string'],
    ])('when the query is %s, then 400 with a message naming the parameter', async (query, message) => {
      const res = await call(newId('tnt'), 'GET', `/v1/mandates${query}`);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { error: 'BAD_REQUEST', message },
      });
    });
  });

  describe('lifecycle', () => {
    const lifecycle = (tenantId: string, id: string, operation: string, body?: unknown) =>
      call(tenantId, 'POST', `/v1/mandates/${id}/${operation}`, body);

    it('when suspended, reactivated and revoked, then each answers 200 with the new state and version +1, and events follow', async () => {
      const tenantId = newId('tnt');
      const { body: created } = await create(tenantId);
      const suspended = await lifecycle(tenantId, created.id, 'suspend', { reason: 'fraud check' });
      expect(suspended).toMatchObject({
        status: 200,
        body: { id: created.id, state: 'SUSPENDED', version: 2 },
      });
      expect(suspended.body.updated_at >= created.updated_at).toBe(true);
      const reactivated = await lifecycle(tenantId, created.id, 'reactivate');
      expect(reactivated).toMatchObject({ status: 200, body: { state: 'ACTIVE', version: 3 } });
      const revoked = await lifecycle(tenantId, created.id, 'revoke', {});
      expect(revoked).toMatchObject({ status: 200, body: { state: 'REVOKED', version: 4 } });
      expect((await call(tenantId, 'GET', `/v1/mandates/${created.id}`)).body).toEqual(revoked.body);

      const events = svc.publisher.ofResource(created.id);
      expect(events.map((e) => e.type)).toEqual([
        'MANDATE_CREATED',
        'MANDATE_SUSPENDED',
        'MANDATE_REACTIVATED',
        'MANDATE_REVOKED',
      ]);
      expect(events.map((e) => e.data).slice(1)).toEqual([
        { previous_state: 'ACTIVE', state: 'SUSPENDED', version: 2, reason: 'fraud check' },
        { previous_state: 'SUSPENDED', state: 'ACTIVE', version: 3 },
        { previous_state: 'ACTIVE', state: 'REVOKED', version: 4 },
      ]);
      for (const e of events) expect(e.resource).toEqual({ type: 'mandate', id: created.id });
    });

    it('when a suspended mandate is revoked, then it is REVOKED', async () => {
      const tenantId = newId('tnt');
      const { body: created } = await create(tenantId);
      await lifecycle(tenantId, created.id, 'suspend');
      expect((await lifecycle(tenantId, created.id, 'revoke')).body).toMatchObject({
        state: 'REVOKED',
        version: 3,
      });
    });

    it.each([
      ['ACTIVE', [], 'reactivate', 'Mandate is not suspended'],
      ['SUSPENDED', ['suspend'], 'suspend', 'Mandate is already suspended'],
      ['REVOKED', ['revoke'], 'revoke', 'Mandate is already revoked'],
      ['REVOKED', ['revoke'], 'suspend', 'Mandate is revoked'],
      ['REVOKED', ['revoke'], 'reactivate', 'Mandate is revoked'],
    ])(
      'when a %s mandate gets %s → %s, then 409 "%s" and the version is unchanged',
      async (_state, setup, operation, message) => {
        const tenantId = newId('tnt');
        const { body: created } = await create(tenantId);
        for (const step of setup) await lifecycle(tenantId, created.id, step);
        const before = (await call(tenantId, 'GET', `/v1/mandates/${created.id}`)).body;
        const eventsBefore = svc.publisher.ofResource(created.id).length;
        const res = await lifecycle(tenantId, created.id, operation);
        expect({ status: res.status, body: res.body }).toEqual({
          status: 409,
          body: { error: 'CONFLICT', message },
        });
        expect((await call(tenantId, 'GET', `/v1/mandates/${created.id}`)).body).toEqual(before);
        expect(svc.publisher.ofResource(created.id)).toHaveLength(eventsBefore);
      },
    );

    it('when two revokes race, then one gets 200 and the other 409 "Mandate is already revoked"', async () => {
      const tenantId = newId('tnt');
      const { body: created } = await create(tenantId);
      const results = await Promise.all([
        lifecycle(tenantId, created.id, 'revoke'),
        lifecycle(tenantId, created.id, 'revoke'),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(results.find((r) => r.status === 409)?.body.message).toBe('Mandate is already revoked');
      expect((await call(tenantId, 'GET', `/v1/mandates/${created.id}`)).body.version).toBe(2);
    });

    it('when the reason is longer than 500 characters or a field is unknown, then 400', async () => {
      const tenantId = newId('tnt');
      const { body: created } = await create(tenantId);
      expect((await lifecycle(tenantId, created.id, 'revoke', { reason: 'x'.repeat(501) })).body).toEqual({
        error: 'BAD_REQUEST',
        message: 'reason must be at most 500 characters',
      });
      expect((await lifecycle(tenantId, created.id, 'revoke', { why: 'x' })).body).toEqual({
        error: 'BAD_REQUEST',
        message: 'why is not allowed',
      });
    });

    it('when the mandate does not exist, then 404', async () => {
      const res = await lifecycle(newId('tnt'), newId('mdt'), 'suspend');
      expect({ status: res.status, body: res.body }).toEqual({
        status: 404,
        body: { error: 'NOT_FOUND', message: 'Mandate not found' },
      });
    });
  });

  describe('HTTP hygiene', () => {
    it('when called without an internal token, then 401 on every route', async () => {
      for (const [method, path] of [
        ['POST', '/v1/mandates'],
        ['GET', '/v1/mandates'],
        ['GET', `/v1/mandates/${newId('mdt')}`],
        ['POST', `/v1/mandates/${newId('mdt')}/revoke`],
        ['GET', '/v1/.well-known/jwks.json'],
        ['GET', `/internal/v1/mandates/${newId('mdt')}`],
      ] as const) {
        const res = await callService(svc.url, method, path, {
          caller: null,
          headers: { 'x-tenant-id': 'tnt_x' },
        });
        expect({ path, status: res.status, body: res.body }).toEqual({
          path,
          status: 401,
          body: { error: 'UNAUTHORIZED', message: 'Missing internal token' },
        });
      }
    });

    it('when the internal token is forged, then 401', async () => {
      const res = await callService(svc.url, 'GET', '/v1/mandates', {
        caller: null,
        headers: { 'x-internal-token': 'a.b.c' },
      });
      expect(res.body).toEqual({ error: 'UNAUTHORIZED', message: 'Invalid internal token' });
    });

    it.each([
      ['DELETE', '/v1/mandates', 'GET, POST'],
      ['PUT', `/v1/mandates/${'mdt_' + '0'.repeat(26)}`, 'GET'],
      ['GET', `/v1/mandates/${'mdt_' + '0'.repeat(26)}/revoke`, 'POST'],
      ['POST', '/v1/.well-known/jwks.json', 'GET'],
    ])('when %s %s, then 405 with Allow', async (method, path, allow) => {
      const res = await call(newId('tnt'), method, path);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 405,
        body: { error: 'METHOD_NOT_ALLOWED', message: `Method not allowed; use ${allow}` },
      });
      expect(res.headers.get('allow')).toBe(allow);
    });

    it('when the path is unknown, then 404 with the envelope', async () => {
      const res = await call(newId('tnt'), 'GET', '/v1/nothing-here');
      expect({ status: res.status, body: res.body }).toEqual({
        status: 404,
        body: { error: 'NOT_FOUND', message: 'Route not found' },
      });
    });

    it('when the body is not JSON, then 400', async () => {
      const res = await callService(svc.url, 'POST', '/v1/mandates', {
        caller: callerFor(newId('tnt')),
        body: '{"principal":',
      });
      expect(res.body).toEqual({ error: 'BAD_REQUEST', message: 'Malformed JSON body' });
    });

    it('when /healthz and /readyz are called without a token, then they answer', async () => {
      expect((await callService(svc.url, 'GET', '/healthz', { caller: null })).status).toBe(200);
      const ready = await callService(svc.url, 'GET', '/readyz', { caller: null });
      expect({ status: ready.status, body: ready.body }).toEqual({
        status: 200,
        body: { status: 'ready', checks: { [`store:${svc.deps.store.kind}`]: 'ok', signer: 'ok' } },
      });
    });
  });
});

describe("identity-verified principal: the name is the verified one (identity's consume, a double)", () => {
  const VERIFIED_NAME = 'Mallory Example';
  const asked: { verificationId: string; principalName?: string }[] = [];
  /** Answers as identity's internal consume route does: the verified name; 400 when the mandate names another. */
  const identity: IdentityVerifications = {
    async consume(_caller, verificationId, _mandateId, principalName) {
      asked.push({ verificationId, principalName });
      if (principalName !== undefined && principalName !== VERIFIED_NAME)
        throw new AppError('BAD_REQUEST', 'principal.name does not match the verified identity');
      return {
        principal_name: VERIFIED_NAME,
        assurance: 'HIGH',
        verification_id: verificationId,
        issuer: 'https://pid.example',
        subject_id: 'wallet:mallory',
        claims_digest: 'f'.repeat(64),
        verified_at: new Date().toISOString(),
      };
    },
  };
  const svc = mandatesForSuite({ identityVerifications: identity });
  const create = (tenantId: string, principal: Record<string, unknown>) =>
    callService(svc.url, 'POST', '/v1/mandates', {
      caller: callerFor(tenantId),
      body: { principal, delegate: 'agent-7' },
    });

  it('when the request names the principal differently, then 400 with a neutral message and no mandate', async () => {
    const tenantId = newId('tnt');
    const res = await create(tenantId, {
      id: 'ceo_alice',
      name: 'Alice Example (CEO)',
      verification_id: 'idv_mallory1',
    });
    expect(res).toMatchObject({
      status: 400,
      body: { error: 'BAD_REQUEST', message: 'principal.name does not match the verified identity' },
    });
    expect(asked.at(-1)).toEqual({ verificationId: 'idv_mallory1', principalName: 'Alice Example (CEO)' });
    const list = await callService(svc.url, 'GET', '/v1/mandates', { caller: callerFor(tenantId) });
    expect(list.body.data).toEqual([]);
  });

  it('when the request omits the name, then the principal carries the verified name, inside the signed fields', async () => {
    const res = await create(newId('tnt'), { id: 'user_m', verification_id: 'idv_mallory2' });
    expect(res.status).toBe(201);
    expect(res.body.principal).toMatchObject({
      id: 'user_m',
      name: VERIFIED_NAME,
      verified: { subject_id: 'wallet:mallory' },
    });
    expect(res.body.principal.verified).not.toHaveProperty('principal_name');
    const [, payload] = res.body.signature.jws.split('.');
    expect(JSON.parse(Buffer.from(payload, 'base64url').toString()).principal.name).toBe(VERIFIED_NAME);
  });

  it('when the request names the principal as verified, then 201 with that name', async () => {
    const res = await create(newId('tnt'), {
      id: 'user_m',
      name: VERIFIED_NAME,
      verification_id: 'idv_mallory3',
    });
    expect(res).toMatchObject({ status: 201, body: { principal: { name: VERIFIED_NAME } } });
  });
});

describe.each(mandateStoreAdapters())('expiry (fixed clock, $name store)', (adapter) => {
  const clock = fixedClock(FIXED_START);
  const svc = mandatesForSuite({ clock }, adapter);
  const { call } = svc;

  it('when expires_at passes, then get, list and lifecycle calls all see EXPIRED', async () => {
    clock.set(FIXED_START);
    const tenantId = newId('tnt');
    const expiresAt = new Date(Date.parse(FIXED_START) + 60_000).toISOString();
    const { body: expiring } = await call(tenantId, 'POST', '/v1/mandates', {
      principal: 'a',
      delegate: 'b',
      expires_at: expiresAt,
    });
    const { body: suspended } = await call(tenantId, 'POST', '/v1/mandates', {
      principal: 'a',
      delegate: 'b',
      expires_at: expiresAt,
    });
    await call(tenantId, 'POST', `/v1/mandates/${suspended.id}/suspend`);
    const { body: revoked } = await call(tenantId, 'POST', '/v1/mandates', {
      principal: 'a',
      delegate: 'b',
      expires_at: expiresAt,
    });
    await call(tenantId, 'POST', `/v1/mandates/${revoked.id}/revoke`);
    const { body: open } = await call(tenantId, 'POST', '/v1/mandates', { principal: 'a', delegate: 'b' });
    expect(expiring).toMatchObject({ state: 'ACTIVE', created_at: FIXED_START });

    clock.advance(60_000);
    expect((await call(tenantId, 'GET', `/v1/mandates/${expiring.id}`)).body).toMatchObject({
      state: 'EXPIRED',
      version: 1,
    });
    expect((await call(tenantId, 'GET', `/internal/v1/mandates/${suspended.id}`)).body).toMatchObject({
      state: 'EXPIRED',
    });
    expect((await call(tenantId, 'GET', `/v1/mandates/${revoked.id}`)).body).toMatchObject({
      state: 'REVOKED',
    });

    const list = await call(tenantId, 'GET', '/v1/mandates');
    expect(list.body.data.map((m: { id: string; state: string }) => [m.id, m.state])).toEqual([
      [open.id, 'ACTIVE'],
      [revoked.id, 'REVOKED'],
      [suspended.id, 'EXPIRED'],
      [expiring.id, 'EXPIRED'],
    ]);
    const expired = await call(tenantId, 'GET', '/v1/mandates?state=EXPIRED');
    expect(expired.body.data.map((m: { id: string }) => m.id)).toEqual([suspended.id, expiring.id]);
    const active = await call(tenantId, 'GET', '/v1/mandates?state=ACTIVE');
    expect(active.body.data.map((m: { id: string }) => m.id)).toEqual([open.id]);

    for (const operation of ['suspend', 'reactivate', 'revoke']) {
      const res = await call(tenantId, 'POST', `/v1/mandates/${expiring.id}/${operation}`);
      expect({ operation, status: res.status, body: res.body }).toEqual({
        operation,
        status: 409,
        body: { error: 'CONFLICT', message: 'Mandate is expired' },
      });
    }
  });

  it('when expires_at is not after the injected clock, then create is a 400', async () => {
    clock.set(FIXED_START);
    const res = await call(newId('tnt'), 'POST', '/v1/mandates', {
      principal: 'a',
      delegate: 'b',
      expires_at: FIXED_START,
    });
    expect(res.body).toEqual({ error: 'BAD_REQUEST', message: 'expires_at must be in the future' });
  });
});
