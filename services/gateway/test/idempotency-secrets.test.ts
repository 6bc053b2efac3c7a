import { createLogger } from '@mandate/shared/observability';
import { type RouteContract } from '@mandate/shared/contract';
import { listen, type RunningServer } from '@mandate/shared/http';
import { testTokens } from '@mandate/shared/testing';
import { closeUpstreams, keysOf, standInService, upstreamsAt } from './helpers';
import { createApp, type GatewayApp, type Upstreams } from '../src/app';
import { Idempotency, MemoryIdempotencyStore } from '../src/idempotency';
import { secretMembersOf, withoutSecrets } from '../src/idempotency/idempotency';
import { ROUTES } from '../src/routes/table';

/**
 * docs/API.md, "Hardening": idempotent replays never carry a secret. Walks every POST of the route table, finds
 * each member of its answers that the defaults or the route's contract name as secret, answers
 * with all of them from a stand-in service and replays: a new route is covered without a new test.
 */

const TENANT = 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa';
const OPERATOR_TOKEN = 'operator-secret-for-tests';
const keys = keysOf({
  'key-secret': {
    key_id: 'key_a',
    tenant_id: TENANT,
    scopes: ['mandates:read', 'mandates:write', 'verify', 'events:read', 'tenants:admin'],
    status: 'active',
    plan: 'enterprise',
  },
});

/** A member path in an answer: the names from the top, e.g. ['api_key', 'api_key']. */
type MemberPath = string[];

interface ZodDef {
  type: string;
  [name: string]: unknown;
}
const defOf = (schema: unknown) => (schema as { _zod: { def: ZodDef } })._zod.def;

/**
 * Every member path of a zod schema whose value is not an object, through optional, nullable,
 * default, pipes, arrays, unions and intersections (an array's items are walked as its members).
 */
function leafPaths(schema: unknown, prefix: MemberPath = [], seen = new Set<unknown>()): MemberPath[] {
  if (seen.has(schema)) return [];
  seen.add(schema);
  const def = defOf(schema);
  const inner = (...schemas: unknown[]) => schemas.flatMap((s) => leafPaths(s, prefix, seen));
  switch (def.type) {
    case 'object': {
      const shape = def.shape as Record<string, unknown>;
      return Object.entries(shape).flatMap(([name, member]) => {
        const below = leafPaths(member, [...prefix, name], new Set(seen));
        return below.length > 0 ? below : [[...prefix, name]];
      });
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return inner(def.innerType);
    case 'pipe':
      return inner(def.out);
    case 'array':
      return inner(def.element);
    case 'union':
      return inner(...(def.options as unknown[]));
    case 'intersection':
      return inner(def.left, def.right);
    case 'lazy':
      return inner((def.getter as () => unknown)());
    default:
      return prefix.length > 0 ? [prefix] : [];
  }
}

const POSTS = ROUTES.filter((r) => r.method === 'POST' && r.service !== 'gateway');

/** The member paths of a route's answers that end in a name the route's rule holds secret. */
function secretPathsOf(route: RouteContract): MemberPath[] {
  const names = secretMembersOf(route);
  const paths = Object.values(route.responses).flatMap((r) => leafPaths(r.schema));
  return paths.filter((p) => names.has(p[p.length - 1]!));
}

/** A name that reads as a credential: anything ending in secret, token, password or key. */
const LOOKS_SECRET = /(^|_)(secret|token|password|api_key|private_key)$/;

/**
 * An answer holding every path: a secret string at each secret path and a plain member beside it
 * at every level, which the replay must keep.
 */
function answerWith(paths: MemberPath[]): Record<string, unknown> {
  const root: Record<string, unknown> = { kept: 'visible' };
  paths.forEach((path, i) => {
    let node = root;
    for (const name of path.slice(0, -1)) {
      node[name] ??= { kept: 'visible' };
      node = node[name] as Record<string, unknown>;
    }
    node[path[path.length - 1]!] = `SECRET-${i}-do-not-replay`;
  });
  return root;
}

/** The answer without its secret paths: what the replay must be. */
function withoutPaths(answer: Record<string, unknown>, paths: MemberPath[]): Record<string, unknown> {
  const copy = structuredClone(answer);
  for (const path of paths) {
    let node = copy;
    for (const name of path.slice(0, -1)) node = node[name] as Record<string, unknown>;
    delete node[path[path.length - 1]!];
  }
  return copy;
}

const concretePath = (route: RouteContract) =>
  route.path.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => (name === 'tenantId' ? TENANT : `x_${name}`));

const ROUTES_WITH_SECRETS = POSTS.map((route) => ({ route, paths: secretPathsOf(route) })).filter(
  (r) => r.paths.length > 0,
);

/** The unauthenticated routes that hand out a capability: never replayed (docs/API.md#idempotency). */
const CAPABILITY_ROUTES = [
  'createSignInVerification',
  'answerIdentityVerification',
  'pollSignInVerification',
  'exchangeSignInToken',
];

describe('idempotent replays carry no secret (docs/API.md, "Hardening"), route by route', () => {
  it('when any route answers a member that reads as a credential, then its contract or the defaults name it secret', () => {
    const unnamed = ROUTES.flatMap((route) =>
      Object.values(route.responses)
        .flatMap((r) => leafPaths(r.schema))
        .map((p) => p[p.length - 1]!)
        .filter((name) => LOOKS_SECRET.test(name) && !secretMembersOf(route).has(name))
        .map((name) => `${route.operationId}: ${name}`),
    );
    expect(unnamed).toEqual([]);
  });

  it('when a route answers a member named secret by default, then its own contract names it too (the document says so)', () => {
    const undeclared = ROUTES.flatMap((route) =>
      Object.values(route.responses)
        .flatMap((r) => leafPaths(r.schema))
        .map((p) => p[p.length - 1]!)
        .filter((name) => secretMembersOf({}).has(name) && !route.secrets?.includes(name))
        .map((name) => `${route.operationId}: ${name}`),
    );
    expect(undeclared).toEqual([]);
  });

  it('when the table is walked, then every route known to answer a secret is among those replayed below', () => {
    expect(ROUTES_WITH_SECRETS.map((r) => r.route.operationId)).toEqual(
      expect.arrayContaining([
        'createApiKey',
        'rotateApiKey',
        'createTenant',
        'approveOnboardingRequest',
        'createSignInVerification',
        'exchangeSignInToken',
      ]),
    );
  });

  describe('through the gateway', () => {
    const answers = new Map<string, { status: number; body: Record<string, unknown> }>();
    /** How many times the stand-in service was called on each path. */
    const served = new Map<string, number>();
    let upstream: RunningServer;
    let upstreams: Upstreams;
    let gateway: GatewayApp;
    let base: string;

    beforeAll(async () => {
      const app = standInService();
      app.all('/{*rest}', (req, res) => {
        served.set(req.path, (served.get(req.path) ?? 0) + 1);
        const answer = answers.get(req.path);
        if (!answer) res.status(500).json({ error: 'INTERNAL_ERROR', message: `no answer for ${req.path}` });
        else res.status(answer.status).json(answer.body);
      });
      upstream = await listen(app, 0);
      upstreams = upstreamsAt(upstream.url);
      const logger = createLogger('idempotency-secrets-test', 'silent');
      gateway = createApp({
        tokens: testTokens,
        logger,
        publisher: { kind: 'in-process', publish: async () => undefined, close: async () => undefined },
        upstreams,
        keys,
        operatorToken: OPERATOR_TOKEN,
        openApiDocument: () => ({}),
        idempotency: new Idempotency(new MemoryIdempotencyStore(), logger),
      });
      base = (await gateway.start(0)).url;
    });
    afterAll(async () => {
      await gateway.stop();
      await closeUpstreams(upstreams);
      await upstream.close();
    });

    it('when the table is walked, then the routes never replayed are exactly those unauthenticated ones', () => {
      expect(POSTS.filter((r) => r.replay === false).map((r) => r.operationId)).toEqual(CAPABILITY_ROUTES);
    });

    it.each(CAPABILITY_ROUTES)(
      'when two callers behind one address send %s with the same Idempotency-Key, then each call runs and none is replayed (docs/API.md#idempotency)',
      async (operationId) => {
        const route = POSTS.find((r) => r.operationId === operationId)!;
        expect(route.auth).toBe('public');
        const path = concretePath(route);
        const status = Number(Object.keys(route.responses)[0]);
        const send = async (link: string) => {
          answers.set(path, { status, body: { id: 'ivr_x', link } });
          const res = await fetch(base + path, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'idempotency-key': `same-${operationId}` },
            body: '{}',
          });
          return {
            status: res.status,
            replayed: res.headers.get('idempotent-replayed'),
            body: await res.json(),
          };
        };
        const before = served.get(path) ?? 0;
        const first = await send('openid4vp://first-caller');
        const second = await send('openid4vp://second-caller');
        expect(first).toEqual({
          status,
          replayed: null,
          body: { id: 'ivr_x', link: 'openid4vp://first-caller' },
        });
        expect(second).toEqual({
          status,
          replayed: null,
          body: { id: 'ivr_x', link: 'openid4vp://second-caller' },
        });
        expect(served.get(path)! - before).toBe(2);
        // The key is still checked: a malformed one is bad input.
        const bad = await fetch(base + path, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': 'k'.repeat(256) },
          body: '{}',
        });
        expect(bad.status).toBe(400);
      },
    );

    it.each(
      ROUTES_WITH_SECRETS.filter((r) => !CAPABILITY_ROUTES.includes(r.route.operationId!)).map((r) => [
        r.route.operationId,
        r,
      ]),
    )(
      'when %s is replayed, then the replay is its answer without any secret member',
      async (_id, { route, paths }) => {
        const path = concretePath(route);
        const status = Number(Object.keys(route.responses)[0]);
        const answer = answerWith(paths);
        answers.set(path, { status, body: answer });
        const headers: Record<string, string> = {
          'content-type': 'application/json',
          'idempotency-key': `replay-${route.operationId}`,
        };
        if (route.auth === 'operator') headers.authorization = `Bearer ${OPERATOR_TOKEN}`;
        if (route.auth === 'tenant') headers.authorization = `Bearer ${TENANT}:key-secret`;
        const send = async () => {
          const res = await fetch(base + path, { method: 'POST', headers, body: '{}' });
          return {
            status: res.status,
            replayed: res.headers.get('idempotent-replayed'),
            text: await res.text(),
          };
        };

        const first = await send();
        const replay = await send();
        expect(first).toMatchObject({ status, replayed: null });
        expect(JSON.parse(first.text)).toEqual(answer);
        expect(replay).toMatchObject({ status, replayed: 'true' });
        expect(replay.text).not.toContain('do-not-replay');
        expect(JSON.parse(replay.text)).toEqual(withoutPaths(answer, paths));
      },
    );
  });
});

describe('withoutSecrets: what a stored answer keeps', () => {
  const strip = (body: unknown, rule: { secrets?: string[] } = {}) =>
    JSON.parse(withoutSecrets(Buffer.from(JSON.stringify(body)), secretMembersOf(rule)).toString());

  it('when a route names a secret of its own, then it is dropped with the defaults', () => {
    expect(strip({ id: 'x', recovery_code: 'r', api_key: 'k' }, { secrets: ['recovery_code'] })).toEqual({
      id: 'x',
    });
  });

  it("when a webhook endpoint's answer carries its secret (a route whose contract names nothing), then the default list drops it", () => {
    expect(strip({ id: 'whe_1', url: 'https://x.example', secret: 'whsec_abc' })).toEqual({
      id: 'whe_1',
      url: 'https://x.example',
    });
  });

  it('when secrets sit in a list of items, then each item loses them', () => {
    expect(
      strip({
        data: [
          { id: 1, access_token: 't' },
          { id: 2, poll_token: 'p' },
        ],
      }),
    ).toEqual({
      data: [{ id: 1 }, { id: 2 }],
    });
  });

  it('when a secret name is only a value, then the stored bytes are the answer as sent', () => {
    const body = Buffer.from('{ "kind": "secret" }');
    expect(withoutSecrets(body, secretMembersOf({}))).toBe(body);
  });
});
