import { fixedClock, newId, serviceUnavailable } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { auditEventSchema } from '@mandate/shared/events';
import { buildOpenApiDocument } from '@mandate/shared/contract';
import { type RunningServer } from '@mandate/shared/http';
import { CapturingPublisher, callService, callerFor, testTokens } from '@mandate/shared/testing';
import { createApp, type VerifyApp } from '../src/app';
import type { Mandate } from '../src/domain/mandate';
import { contract } from '../src/contract';
import type { MandateReader } from '../src/mandates/mandate-reader';
import { MemoryMandateReader } from '../src/mandates/memory-mandate-reader';
import { buildMandate, NOW } from './factories';

const logger = createLogger('verify-test', 'silent');

describe('POST /v1/verify', () => {
  const reader = new MemoryMandateReader();
  const publisher = new CapturingPublisher();
  const clock = fixedClock(NOW);
  let verify: VerifyApp;
  let server: RunningServer;

  beforeAll(async () => {
    verify = createApp({ reader, publisher, tokens: testTokens, logger, clock });
    server = await verify.start();
  });
  afterAll(async () => {
    await verify.stop();
  });
  beforeEach(() => {
    clock.set(NOW);
    publisher.failing = false;
  });

  /** A fresh tenant with one mandate in the reader. */
  function given(overrides: Parameters<typeof buildMandate>[0] = {}): Mandate {
    const mandate = buildMandate(overrides);
    reader.put(mandate);
    return mandate;
  }

  const verifyAs = (tenantId: string, body: unknown, headers?: Record<string, string>) =>
    callService(server.url, 'POST', '/v1/verify', { caller: callerFor(tenantId), body, headers });

  /** The raw bytes of the response, for byte-identity checks. */
  async function rawVerify(tenantId: string, body: unknown): Promise<string> {
    const res = await fetch(`${server.url}/v1/verify`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-internal-token': await testTokens.mint(callerFor(tenantId), 'verify'),
      },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return res.text();
  }

  it('when every check passes, then the answer is a 200 ALLOW with the mandate state and version', async () => {
    const m = given({ version: 3 });
    const res = await verifyAs(m.tenant_id, {
      mandate_id: m.id,
      action: 'payments:create',
      delegate_id: 'agent_bob',
    });
    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: {
        decision: 'ALLOW',
        reason: 'OK',
        mandate_id: m.id,
        mandate_state: 'ACTIVE',
        mandate_version: 3,
        decision_id: expect.stringMatching(/^dec_[0-9a-f]{26}$/),
      },
    });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  const denials: [string, Parameters<typeof buildMandate>[0], Record<string, unknown>, string][] = [
    ['MANDATE_SUSPENDED', { state: 'SUSPENDED' }, {}, 'SUSPENDED'],
    ['MANDATE_REVOKED', { state: 'REVOKED' }, {}, 'REVOKED'],
    ['MANDATE_EXPIRED', { expires_at: '2026-01-02T00:00:00.000Z' }, {}, 'EXPIRED'],
    ['MANDATE_NOT_YET_VALID', { valid_from: '2026-12-01T00:00:00.000Z' }, {}, 'ACTIVE'],
    ['DELEGATE_MISMATCH', {}, { delegate_id: 'agent_eve' }, 'ACTIVE'],
    ['ACTION_NOT_PERMITTED', {}, { action: 'transfers:create' }, 'ACTIVE'],
    [
      'RESOURCE_NOT_PERMITTED',
      { scope: { actions: ['*'], resources: ['acct:1'] } },
      { resource: 'acct:2' },
      'ACTIVE',
    ],
    ['RESOURCE_NOT_PERMITTED', { scope: { actions: ['*'], resources: ['acct:1'] } }, {}, 'ACTIVE'],
    ['AMOUNT_REQUIRED', { scope: { actions: ['*'], constraints: { max_amount: 100 } } }, {}, 'ACTIVE'],
    [
      'CURRENCY_MISMATCH',
      { scope: { actions: ['*'], constraints: { currency: 'EUR' } } },
      { amount: 5, currency: 'USD' },
      'ACTIVE',
    ],
    ['CURRENCY_MISMATCH', { scope: { actions: ['*'], constraints: { currency: 'EUR' } } }, {}, 'ACTIVE'],
    [
      'AMOUNT_EXCEEDS_LIMIT',
      { scope: { actions: ['*'], constraints: { max_amount: 100 } } },
      { amount: 101 },
      'ACTIVE',
    ],
  ];

  it.each(denials)(
    'when the request meets %s, then the answer is a 200 DENY with that reason',
    async (reason, mandate, input, state) => {
      const m = given(mandate);
      const res = await verifyAs(m.tenant_id, { mandate_id: m.id, action: 'payments:create', ...input });
      expect({
        status: res.status,
        decision: res.body.decision,
        reason: res.body.reason,
        state: res.body.mandate_state,
      }).toEqual({
        status: 200,
        decision: 'DENY',
        reason,
        state,
      });
    },
  );

  it('when the same request is sent twice, then the bodies are byte-identical', async () => {
    const m = given();
    const body = { mandate_id: m.id, action: 'payments:refund', amount: 250, currency: 'EUR' };
    const first = await rawVerify(m.tenant_id, body);
    clock.advance(5_000);
    const second = await rawVerify(m.tenant_id, body);
    expect(second).toBe(first);
    expect(first.startsWith('{"decision":"ALLOW","reason":"OK","mandate_id":')).toBe(true);
  });

  it('when the mandate changes state, then the next verify answers from the new version with a new decision_id', async () => {
    const m = given();
    const body = { mandate_id: m.id, action: 'payments:create' };
    const before = await verifyAs(m.tenant_id, body);
    reader.put({ ...m, state: 'SUSPENDED', version: m.version + 1 });
    const after = await verifyAs(m.tenant_id, body);
    expect(after.body).toMatchObject({
      decision: 'DENY',
      reason: 'MANDATE_SUSPENDED',
      mandate_version: m.version + 1,
    });
    expect(after.body.decision_id).not.toBe(before.body.decision_id);
  });

  it('when the clock passes expires_at, then the same mandate version answers EXPIRED', async () => {
    const m = given({ expires_at: new Date(NOW.getTime() + 1_000).toISOString() });
    const body = { mandate_id: m.id, action: 'payments:create' };
    expect((await verifyAs(m.tenant_id, body)).body.reason).toBe('OK');
    clock.advance(1_000);
    expect((await verifyAs(m.tenant_id, body)).body).toMatchObject({
      reason: 'MANDATE_EXPIRED',
      mandate_state: 'EXPIRED',
    });
  });

  it('when the mandate is unknown, then the answer is 404 NOT_FOUND', async () => {
    const res = await verifyAs(newId('tnt'), { mandate_id: newId('mdt'), action: 'payments:create' });
    expect({ status: res.status, body: res.body }).toEqual({
      status: 404,
      body: { error: 'NOT_FOUND', message: 'Mandate not found' },
    });
  });

  it("when the mandate is another tenant's, then the answer is the same 404", async () => {
    const m = given();
    const res = await verifyAs(newId('tnt'), { mandate_id: m.id, action: 'payments:create' });
    expect({ status: res.status, body: res.body }).toEqual({
      status: 404,
      body: { error: 'NOT_FOUND', message: 'Mandate not found' },
    });
  });

  it('when a verify is answered, then VERIFICATION_PERFORMED is published with the input and the decision', async () => {
    const m = given();
    const body = { mandate_id: m.id, action: 'payments:create', amount: 7 };
    const res = await verifyAs(m.tenant_id, body);
    const event = publisher.events.find((e) => e.tenant_id === m.tenant_id);
    expect(auditEventSchema.parse(event)).toEqual({
      id: expect.stringMatching(/^evt_/),
      tenant_id: m.tenant_id,
      type: 'VERIFICATION_PERFORMED',
      occurred_at: NOW.toISOString(),
      actor: callerFor(m.tenant_id).actor,
      request_id: 'req_test',
      resource: { type: 'mandate', id: m.id },
      data: {
        input: body,
        decision: 'ALLOW',
        reason: 'OK',
        decision_id: res.body.decision_id,
        mandate_version: m.version,
      },
    });
  });

  it('when publishing fails, then the decision is still answered', async () => {
    const m = given();
    publisher.failing = true;
    const res = await verifyAs(m.tenant_id, { mandate_id: m.id, action: 'payments:create' });
    expect({ status: res.status, decision: res.body.decision }).toEqual({ status: 200, decision: 'ALLOW' });
  });

  describe('invalid requests', () => {
    const cases: [string, unknown, string][] = [
      ['mandate_id is missing', { action: 'payments:create' }, 'mandate_id is required'],
      ['action is missing', { mandate_id: 'mdt_x' }, 'action is required'],
      ['action is empty', { mandate_id: 'mdt_x', action: '' }, 'action must not be empty'],
      [
        'action is too long',
        { mandate_id: 'mdt_x', action: 'a'.repeat(201) },
        'action must be at most 200 characters',
      ],
      [
        'an unknown field is sent',
        { mandate_id: 'mdt_x', action: 'a', principal_id: 'p' },
        'principal_id is not allowed',
      ],
      [
        'amount is not an integer',
        { mandate_id: 'mdt_x', action: 'a', amount: 1.5 },
        'amount must be an integer',
      ],
      ['amount is a string', { mandate_id: 'mdt_x', action: 'a', amount: '100' }, 'amount must be a number'],
      ['amount is negative', { mandate_id: 'mdt_x', action: 'a', amount: -1 }, 'amount must be at least 0'],
      [
        'currency is lowercase',
        { mandate_id: 'mdt_x', action: 'a', currency: 'eur' },
        'currency: must be a 3-letter uppercase ISO 4217 code',
      ],
      [
        'delegate_id is too long',
        { mandate_id: 'mdt_x', action: 'a', delegate_id: 'd'.repeat(257) },
        'delegate_id must be at most 256 characters',
      ],
      [
        'resource is not a string',
        { mandate_id: 'mdt_x', action: 'a', resource: 5 },
        'resource must be a string',
      ],
      ['the body is an array', [], 'body must be an object'],
    ];
    it.each(cases)('when %s, then the answer is 400 naming the field', async (_name, body, message) => {
      const res = await verifyAs(newId('tnt'), body);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { error: 'BAD_REQUEST', message },
      });
    });

    it('when the JSON is malformed, then the answer is 400', async () => {
      const res = await verifyAs(newId('tnt'), '{"mandate_id": ');
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { error: 'BAD_REQUEST', message: 'Malformed JSON body' },
      });
    });

    it('when the content type is not JSON, then the answer is 400', async () => {
      const res = await verifyAs(newId('tnt'), 'mandate_id=x', { 'content-type': 'text/plain' });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { error: 'BAD_REQUEST', message: 'Content-Type must be application/json' },
      });
    });

    it('when there is no body, then the answer is 400', async () => {
      const res = await callService(server.url, 'POST', '/v1/verify', { caller: callerFor(newId('tnt')) });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { error: 'BAD_REQUEST', message: 'body is required' },
      });
    });
  });

  describe('access', () => {
    it('when no internal token is sent, then the answer is 401', async () => {
      const res = await callService(server.url, 'POST', '/v1/verify', {
        caller: null,
        body: { mandate_id: 'mdt_x', action: 'a' },
      });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 401,
        body: { error: 'UNAUTHORIZED', message: 'Missing internal token' },
      });
    });

    it('when the internal token is forged, then the answer is 401', async () => {
      const res = await callService(server.url, 'POST', '/v1/verify', {
        caller: null,
        body: { mandate_id: 'mdt_x', action: 'a' },
        headers: { 'x-internal-token': 'not.a.token' },
      });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 401,
        body: { error: 'UNAUTHORIZED', message: 'Invalid internal token' },
      });
    });

    it('when the caller has no tenant, then the answer is 401', async () => {
      const res = await callService(server.url, 'POST', '/v1/verify', {
        caller: callerFor(null),
        body: { mandate_id: 'mdt_x', action: 'a' },
      });
      expect(res.status).toBe(401);
    });

    it('when GET is used, then the answer is 405 naming POST', async () => {
      const res = await callService(server.url, 'GET', '/v1/verify', { caller: callerFor(newId('tnt')) });
      expect({ status: res.status, body: res.body, allow: res.headers.get('allow') }).toEqual({
        status: 405,
        body: { error: 'METHOD_NOT_ALLOWED', message: 'Method not allowed; use POST' },
        allow: 'POST',
      });
    });

    it('when an unknown path is called, then the answer is 404', async () => {
      const res = await callService(server.url, 'POST', '/v1/verify/extra', {
        caller: callerFor(newId('tnt')),
        body: {},
      });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 404,
        body: { error: 'NOT_FOUND', message: 'Route not found' },
      });
    });

    it('when /healthz and /readyz are called without a token, then both answer 200', async () => {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      const ready = await fetch(`${server.url}/readyz`);
      expect({ status: ready.status, body: await ready.json() }).toEqual({
        status: 200,
        body: { status: 'ready', checks: { mandates: 'ok' } },
      });
    });
  });
});

describe('POST /v1/verify with the mandates service down', () => {
  const down: MandateReader = {
    get: async () => {
      throw serviceUnavailable('Mandates service unavailable');
    },
    check: async () => 'mandates unreachable',
    close: async () => {},
  };
  let verify: VerifyApp;
  let server: RunningServer;
  beforeAll(async () => {
    verify = createApp({
      reader: down,
      publisher: new CapturingPublisher(),
      tokens: testTokens,
      logger,
      clock: fixedClock(NOW),
    });
    server = await verify.start();
  });
  afterAll(() => verify.stop());

  it('when a verify needs a mandate, then the answer is 503 and /readyz says not ready', async () => {
    const res = await callService(server.url, 'POST', '/v1/verify', {
      caller: callerFor(newId('tnt')),
      body: { mandate_id: 'mdt_x', action: 'a' },
    });
    expect({ status: res.status, body: res.body }).toEqual({
      status: 503,
      body: { error: 'SERVICE_UNAVAILABLE', message: 'Mandates service unavailable' },
    });
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
  });
});

describe('openApi', () => {
  it('when the document is built, then POST /v1/verify is in it with its request and response schemas', () => {
    const doc = buildOpenApiDocument(contract);
    const op = doc.paths?.['/v1/verify']?.post;
    expect(op).toBeDefined();
    expect(Object.keys(op!.responses ?? {})).toEqual(expect.arrayContaining(['200', '400', '404', '503']));
    expect(doc.components?.schemas).toHaveProperty('VerifyRequest');
    expect(doc.components?.schemas).toHaveProperty('VerifyResponse');
  });
});
