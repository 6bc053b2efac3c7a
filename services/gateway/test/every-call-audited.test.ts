import { type AuditEvent } from '@mandate/shared/events';
import { API_KEY_SCOPES } from '@mandate/shared/contract';
import { listen, type RunningServer } from '@mandate/shared/http';
import { CapturingPublisher } from '@mandate/shared/testing';
import { closeUpstreams, keysOf, standInService, testGateway, upstreamsAt } from './helpers';
import type { GatewayApp, Upstreams } from '../src/app';
import type { Principal } from '../src/auth/authenticate';
import type { ResolvedKey } from '../src/auth/key-resolver';
import type { LimitDecision, RequestLimiter } from '../src/limits';
import { ROUTES, type RouteRule, type Scope } from '../src/routes/table';

/**
 * docs/API.md#audit-of-every-call: every authenticated call is one API_CALL with its key id (or
 * subject), whatever it is answered: 2xx, 403 for a missing scope or permission, 404 for another
 * tenant's path, 409 / 422 / 404 / 5xx from the service, 413 for a body over the limit and 429
 * from the limiter. Calls whose credential did not authenticate (401, the failed-authentication
 * 429) and requests no route takes (404 / 405) are no API_CALL. The cases are generated from the
 * route table, so a new route gets them by existing.
 */
const TENANT_A = 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa';
const TENANT_B = 'tnt_01jbbbbbbbbbbbbbbbbbbbbbbb';
const OPERATOR_TOKEN = 'operator-secret-for-tests';

const key = (key_id: string, scopes: readonly Scope[]): ResolvedKey => ({
  key_id,
  tenant_id: TENANT_A,
  scopes: [...scopes],
  status: 'active',
  plan: 'beta',
});
const keys: Record<string, ResolvedKey> = { 'secret-all': key('key_all', API_KEY_SCOPES) };
/** A key holding every scope but those the route accepts (its `scopes`, else its `scope`): its secret and key id. */
const keyLacking = (rule: RouteRule): { secret: string; keyId: string } => {
  const accepted: readonly Scope[] = rule.scopes ?? [rule.scope!];
  const name = accepted.map((s) => s.replace(':', '_')).join('_');
  const secret = `secret-without-${name}`;
  keys[secret] ??= key(
    `key_without_${name}`,
    API_KEY_SCOPES.filter((s) => !accepted.includes(s)),
  );
  return { secret, keyId: `key_without_${name}` };
};

const routeName = (rule: RouteRule) => `${rule.method} ${rule.path}`;
const concrete = (rule: RouteRule, tenantId = TENANT_A) =>
  rule.path.replace(/:tenantId\b/, tenantId).replace(/:[A-Za-z]+/g, 'res_1');

describe('every authenticated call is one API_CALL (docs/API.md#audit-of-every-call)', () => {
  const publisher = new CapturingPublisher();
  /** The status the stand-in service answers next; the limiter's verdict for the next call. */
  let upstreamStatus = 200;
  let limited = false;
  let upstream: RunningServer;
  let upstreams: Upstreams;
  let gateway: GatewayApp;
  let base: string;
  let counter = 0;

  const limiter: RequestLimiter = {
    check: async (): Promise<LimitDecision> =>
      limited
        ? { allowed: false, headers: { 'Retry-After': '1' }, message: 'Rate limit exceeded' }
        : { allowed: true, headers: {} },
    readiness: () => ({}),
    close: async () => undefined,
  };
  // A JWT caller whose role holds no permission at all (the 403 of a user).
  const jwt = {
    authenticate: async (_token: string, tenantId: string | null): Promise<Principal> => ({
      tenantId,
      actor: { type: 'user', subject_id: 'sub_viewer' },
      permissions: [],
    }),
  };

  beforeAll(async () => {
    const app = standInService();
    app.all('/{*rest}', (_req, res) => {
      res
        .status(upstreamStatus)
        .json(
          upstreamStatus < 300
            ? { ok: true }
            : { error: upstreamStatus >= 500 ? 'INTERNAL' : 'REFUSED', message: 'as the test asked' },
        );
    });
    upstream = await listen(app, 0);
    upstreams = upstreamsAt(upstream.url);
    gateway = testGateway({
      publisher,
      upstreams,
      keys: keysOf(keys),
      operatorToken: OPERATOR_TOKEN,
      limiter,
      jwt,
      openApiDocument: () => ({ openapi: '3.1.0' }),
    });
    base = (await gateway.start(0)).url;
  });
  afterAll(async () => {
    await gateway.stop();
    await closeUpstreams(upstreams);
    await upstream.close();
  });

  /** Sends one call; returns its status and the API_CALL events recorded under its request id. */
  async function send(
    rule: RouteRule,
    path: string,
    authorization: string | undefined,
    options: { body?: string; upstream?: number; limited?: boolean; tenantHeader?: boolean } = {},
  ): Promise<{ status: number; events: AuditEvent[] }> {
    const requestId = `audit-case-${++counter}`;
    upstreamStatus = options.upstream ?? 200;
    limited = options.limited ?? false;
    const body = options.body ?? (['POST', 'PUT', 'PATCH'].includes(rule.method) ? '{}' : undefined);
    const res = await fetch(base + path, {
      method: rule.method,
      headers: {
        'x-request-id': requestId,
        ...(authorization ? { authorization } : {}),
        ...(options.tenantHeader ? { 'x-tenant-id': TENANT_A } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body,
    });
    await res.arrayBuffer();
    // The event is handed to the publisher before the answer's last bytes go out (pipeline/audit.ts).
    const events = publisher.events.filter((e) => e.type === 'API_CALL' && e.request_id === requestId);
    return { status: res.status, events };
  }

  const expectAudited = (
    outcome: { status: number; events: AuditEvent[] },
    status: number,
    rule: RouteRule,
    actor: Record<string, unknown>,
  ) => {
    expect(outcome.status).toBe(status);
    expect(outcome.events).toHaveLength(1);
    expect(outcome.events[0]).toMatchObject({
      actor,
      data: { method: rule.method, route: rule.path, status },
    });
  };

  const tenantRoutes = ROUTES.filter((r) => r.auth === 'tenant');
  const operatorRoutes = ROUTES.filter((r) => r.auth === 'operator');
  const allKey = `Bearer ${TENANT_A}:secret-all`;
  const asAllKey = { type: 'api_key', key_id: 'key_all' };

  it('when the table is read, then it has tenant and operator routes to go through', () => {
    expect(tenantRoutes.length).toBeGreaterThan(20);
    expect(operatorRoutes.length).toBeGreaterThan(0);
  });

  describe.each(tenantRoutes.map((rule) => [routeName(rule), rule] as const))('%s', (_name, rule) => {
    const own = rule.service === 'gateway';
    it('when it is answered 2xx, then one API_CALL with the key id', async () => {
      const outcome = await send(rule, concrete(rule), allKey);
      expect(outcome.status).toBeGreaterThanOrEqual(200);
      // GET /v1/usage of a gateway without a usage counter is its 503: audited all the same.
      expectAudited(outcome, outcome.status, rule, asAllKey);
      expect(outcome.events[0]!.data).toMatchObject({ key_id: 'key_all' });
    });

    if (rule.scope) {
      it(`when the key lacks ${(rule.scopes ?? [rule.scope]).join(' and ')}, then 403 and one API_CALL with that key id`, async () => {
        const { secret, keyId } = keyLacking(rule);
        const outcome = await send(rule, concrete(rule), `Bearer ${TENANT_A}:${secret}`);
        expectAudited(outcome, 403, rule, { type: 'api_key', key_id: keyId });
        expect(outcome.events[0]!.data).toMatchObject({ key_id: keyId });
      });

      it('when a JWT caller lacks the permission, then 403 and one API_CALL with its subject', async () => {
        const outcome = await send(rule, concrete(rule), 'Bearer aaa.bbb.ccc', { tenantHeader: true });
        expectAudited(outcome, 403, rule, { type: 'user', subject_id: 'sub_viewer' });
        expect(outcome.events[0]!.data).toMatchObject({ key_id: null, subject_id: 'sub_viewer' });
      });
    }

    if (rule.path.includes(':tenantId')) {
      it("when the path names another tenant, then 404 and one API_CALL in the caller's tenant", async () => {
        const outcome = await send(rule, concrete(rule, TENANT_B), allKey);
        expectAudited(outcome, 404, rule, asAllKey);
        expect(outcome.events[0]!.tenant_id).toBe(TENANT_A);
      });
    }

    if (!own) {
      it.each([404, 409, 422, 500, 503])(
        'when the service answers %i, then one API_CALL with that status',
        async (status) => {
          const outcome = await send(rule, concrete(rule), allKey, { upstream: status });
          expect(outcome.status).toBe(status);
          expectAudited(outcome, status, rule, asAllKey);
        },
      );
    }

    if (!own && ['POST', 'PUT', 'PATCH'].includes(rule.method)) {
      it('when the body is over the limit, then 413 and one API_CALL', async () => {
        const outcome = await send(rule, concrete(rule), allKey, {
          body: `"${'x'.repeat(2 * 1024 * 1024)}"`,
        });
        expect(outcome.status).toBe(413);
        expectAudited(outcome, 413, rule, asAllKey);
      });
    }

    it('when the limiter refuses, then 429 and one API_CALL', async () => {
      const outcome = await send(rule, concrete(rule), allKey, { limited: true });
      expect(outcome.status).toBe(429);
      expectAudited(outcome, 429, rule, asAllKey);
    });

    it('when the credential does not authenticate, then 401 and no API_CALL', async () => {
      const unknown = await send(rule, concrete(rule), `Bearer ${TENANT_A}:secret-never-issued`);
      expect(unknown.status).toBe(401);
      expect(unknown.events).toHaveLength(0);
      const none = await send(rule, concrete(rule), undefined);
      expect(none.status).toBe(401);
      expect(none.events).toHaveLength(0);
    });
  });

  describe.each(operatorRoutes.map((rule) => [routeName(rule), rule] as const))('%s', (_name, rule) => {
    const operator = `Bearer ${OPERATOR_TOKEN}`;
    it.each([200, 404, 409, 422, 500])(
      'when the operator is answered %i, then one API_CALL as the operator',
      async (status) => {
        const outcome = await send(rule, concrete(rule), operator, { upstream: status });
        expectAudited(outcome, status, rule, { type: 'operator' });
        expect(outcome.events[0]!.data).toMatchObject({ key_id: null });
      },
    );

    it('when a tenant key calls it, then 401 and no API_CALL', async () => {
      const outcome = await send(rule, concrete(rule), allKey);
      expect(outcome.status).toBe(401);
      expect(outcome.events).toHaveLength(0);
    });
  });

  it('when no route takes the request (404, 405), then no API_CALL: nothing authenticated', async () => {
    const [rule] = tenantRoutes;
    const missing = await send({ ...rule!, method: 'GET' }, '/v1/no-such-route', allKey);
    expect(missing.status).toBe(404);
    expect(missing.events).toHaveLength(0);
    const wrongMethod = await send({ ...rule!, method: 'DELETE' }, '/v1/openapi.json', allKey);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.events).toHaveLength(0);
  });
});
