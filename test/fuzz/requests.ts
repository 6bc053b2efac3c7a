/**
 * fast-check arbitraries of HTTP requests against the gateway's route table: mostly well-formed
 * calls by a tenant that owns real resources (so the fuzz reaches the services' validation and
 * domain code), mixed with malformed credentials, methods, paths, query strings, headers and bodies.
 */
import fc from 'fast-check';
import { ROUTES, type RouteRule } from '@mandate/gateway';

export interface Fixtures {
  tenantA: string;
  tenantB: string;
  /** tenantId:secret of A's key with every scope (never revoked: its id is not in any pool). */
  authA: string;
  secretA: string;
  /** A's key with mandates:read only. */
  readOnlyA: string;
  authB: string;
  operatorToken: string;
  mandatesA: string[];
  mandatesB: string[];
  /** A's keys the fuzz may rotate, activate and revoke. */
  victimKeysA: string[];
  keysB: string[];
  roleAssignmentsA: string[];
  onboardingIds: string[];
  eventsA: string[];
  /** A's identity verifications (PENDING until the fuzz answers them), and a sign-in session of A. */
  identityVerificationsA: string[];
  signInA: { id: string; pollToken: string };
  /** The status list the seeded mandates sit in (a public route). */
  statusLists: string[];
  /** A receiver the test runs (loopback webhooks are allowed, as under `npm start`), A's endpoints on it and a delivery to one. */
  webhookReceiverUrl: string;
  webhookEndpointsA: string[];
  /** An endpoint of A kept out of that pool (so never deleted by the fuzz), with a delivery to retry. */
  webhookDeliveryEndpointA: string;
  webhookDeliveriesA: string[];
  /** Holds on A's mandates (docs/API.md#budgets) the fuzz may capture and void. */
  authorizationsA: string[];
  /** The tree size of a signed checkpoint of A's log (docs/API.md#proving-the-log). */
  checkpointSizeA: number;
}

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** The route the request was generated from (for coverage), or 'random'. */
  route: string;
  /** Why this request must be refused (≥ 400) whatever else it holds: a poisoned body (docs/API.md, "Hardening"). */
  mustReject?: string;
}

const FORBIDDEN_MEMBERS = ['__proto__', 'constructor', 'prototype'];
/** Dot segments and encoded separators a resource must never hold (docs/API.md, "Hardening"), each placed in front of a resource. */
const RESOURCE_TRAVERSALS = ['../', './', 'a/../', 'a\\..\\', '%2F', '%2f', '%5C', '%2E%2E/', '/./'];
type Poison =
  | { kind: 'none' }
  | { kind: 'member'; name: string; path: number[] }
  | { kind: 'utf8'; bytes: readonly number[] }
  | { kind: 'duplicate'; path: number[] }
  | { kind: 'resource'; traversal: string };
const poison: fc.Arbitrary<Poison> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ kind: 'none' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('member' as const),
      name: fc.constantFrom(...FORBIDDEN_MEMBERS),
      path: fc.array(fc.nat(), { maxLength: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('utf8' as const),
      // A lone continuation byte, a truncated sequence, an overlong encoding, a surrogate, 0xff.
      bytes: fc.constantFrom([0x80], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xff]),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('duplicate' as const),
      path: fc.array(fc.nat(), { maxLength: 3 }),
    }),
  },
  {
    // Heavier: only the two routes that carry a resource have a place for it.
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('resource' as const),
      traversal: fc.constantFrom(...RESOURCE_TRAVERSALS),
    }),
  },
);

/**
 * The JSON text of `value` with the first member of one of its objects (reached along `path`, else
 * the outermost) written twice, the first time with another value: `{"delegate":"x","delegate":…}`,
 * which JSON.parse would silently resolve to the last. Undefined when it holds no non-empty object.
 */
function withDuplicateMember(value: unknown, path: number[]): string | undefined {
  const isObject = (v: unknown): v is Record<string, unknown> =>
    v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0;
  let target: unknown = isObject(value) ? value : undefined;
  let node: unknown = value;
  for (const choice of path) {
    if (node === null || typeof node !== 'object') break;
    const children = Object.values(node);
    if (children.length === 0) break;
    node = children[choice % children.length];
    if (isObject(node)) target = node;
  }
  if (target === undefined) return undefined;
  const write = (v: unknown): string => {
    if (Array.isArray(v)) return `[${v.map((item) => write(item ?? null)).join(',')}]`;
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    const members = Object.entries(v)
      .filter(([, m]) => m !== undefined)
      .map(([k, m]) => `${JSON.stringify(k)}:${write(m)}`);
    if (v === target) members.unshift(`${JSON.stringify(Object.keys(v)[0])}:"dup"`);
    return `{${members.join(',')}}`;
  };
  return write(value);
}

/**
 * A valid body made unacceptable: a forbidden member name somewhere in it, invalid UTF-8 inside
 * its first string value (which a lenient decoder would turn into U+FFFD and accept), a member
 * named twice in one object, or a dot segment or encoded separator in front of its first resource.
 * Undefined when the body has no place for it (not an object, no string value, no resource).
 */
function poisoned(value: unknown, p: Poison): { body: Buffer; reason: string } | undefined {
  if (p.kind === 'none') return undefined;
  if (p.kind === 'duplicate') {
    const text = withDuplicateMember(value, p.path);
    return text === undefined ? undefined : { body: Buffer.from(text), reason: 'a member named twice' };
  }
  if (p.kind === 'resource') {
    // The first resource (verify) or resources pattern (a mandate's scope) of the body, if any.
    const text = JSON.stringify(value);
    const at = text?.search(/"resources?":\[?"/) ?? -1;
    if (at < 0) return undefined;
    const start = text!.indexOf('"', text!.indexOf(':', at)) + 1;
    const inserted = JSON.stringify(p.traversal).slice(1, -1);
    return {
      body: Buffer.from(text!.slice(0, start) + inserted + text!.slice(start)),
      reason: `a resource with ${p.traversal}`,
    };
  }
  if (p.kind === 'member') {
    const text = JSON.stringify(mutate(value, { kind: 'add', path: p.path, key: p.name, value: 'x' }));
    if (text === undefined || !text.includes(`"${p.name}":`)) return undefined;
    return { body: Buffer.from(text), reason: `member name ${p.name}` };
  }
  const text = JSON.stringify(value);
  const at = text?.indexOf('":"') ?? -1;
  if (at < 0) return undefined;
  const json = Buffer.from(text!);
  return {
    body: Buffer.concat([json.subarray(0, at + 3), Buffer.from(p.bytes), json.subarray(at + 3)]),
    reason: `invalid UTF-8 ${Buffer.from(p.bytes).toString('hex')}`,
  };
}

/** Header values node's client accepts: printable ASCII and Latin-1. */
const headerChar = fc
  .oneof(
    { weight: 9, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
    { weight: 1, arbitrary: fc.integer({ min: 0xa0, max: 0xff }) },
  )
  .map((c) => String.fromCharCode(c));
const headerString = (maxLength: number) => fc.string({ unit: headerChar, maxLength });
/** Path characters node's client accepts (0x21–0xff), without the query and fragment marks. */
const pathChar = fc
  .oneof(
    { weight: 9, arbitrary: fc.integer({ min: 0x21, max: 0x7e }) },
    { weight: 1, arbitrary: fc.integer({ min: 0xa0, max: 0xff }) },
  )
  .filter((c) => c !== 0x3f && c !== 0x23)
  .map((c) => String.fromCharCode(c));

const ODD_SEGMENTS = [
  '%2F',
  '%00',
  '..',
  '.',
  '%',
  '%zz',
  '%E0%A4%A',
  '%C3%A9',
  '\u00e9',
  'a%20b',
  '%2e%2e',
  '%252F',
  'mdt_' + 'x'.repeat(300),
  '*',
  '$',
  '~',
  "'",
  '"',
  '\\',
  '{}',
  '[',
  ']',
  'null',
  'undefined',
  '0',
  '-1',
  'tnt_01jzzzzzzzzzzzzzzzzzzzzzzz',
  'mdt_01jzzzzzzzzzzzzzzzzzzzzzzz',
  '__proto__',
  'constructor',
  'x'.repeat(2000),
];

let requestCounter = 0;
const uniqueRequestId = () => `fuzz-${process.pid}-${++requestCounter}`;

const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.string({ maxLength: 20 }),
  fc.constant(''),
  fc.constant('x'.repeat(5000)),
  fc.constant(-1),
  fc.constant(1e308),
  fc.constant(Number.MAX_SAFE_INTEGER + 2),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  fc.constant({ __proto__: { polluted: true } }),
  fc.constant(JSON.parse('{"__proto__": {"polluted": true}}')),
);

type Mutation =
  | { kind: 'none' }
  | { kind: 'delete'; path: number[] }
  | { kind: 'set'; path: number[]; value: unknown }
  | { kind: 'add'; path: number[]; key: string; value: unknown }
  | { kind: 'replace'; value: unknown };

const choicePath = fc.array(fc.nat(), { minLength: 1, maxLength: 4 });
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 5, arbitrary: fc.constant<Mutation>({ kind: 'none' }) },
  { weight: 2, arbitrary: choicePath.map((path): Mutation => ({ kind: 'delete', path })) },
  {
    weight: 3,
    arbitrary: fc
      .record({ path: choicePath, value: weirdValue })
      .map((m): Mutation => ({ kind: 'set', ...m })),
  },
  {
    weight: 1,
    arbitrary: fc
      .record({
        path: choicePath,
        key: fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('extra', '__proto__', 'constructor')),
        value: weirdValue,
      })
      .map((m): Mutation => ({ kind: 'add', ...m })),
  },
  { weight: 1, arbitrary: weirdValue.map((value): Mutation => ({ kind: 'replace', value })) },
);

/** Applies a mutation at a path chosen through the value's own keys (a copy; the template is untouched). */
function mutate(value: unknown, m: Mutation): unknown {
  if (m.kind === 'none') return value;
  if (m.kind === 'replace') return m.value;
  const root = structuredClone(value);
  let parent: Record<string, unknown> | unknown[] | undefined;
  let key: string | number | undefined;
  let node: unknown = root;
  for (const choice of m.path) {
    if (node === null || typeof node !== 'object') break;
    const keys = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
    if (keys.length === 0) break;
    parent = node as Record<string, unknown>;
    key = keys[choice % keys.length]!;
    node = (parent as Record<string | number, unknown>)[key];
    if (choice % 3 === 0) break;
  }
  if (m.kind === 'add') {
    const target = node !== null && typeof node === 'object' && !Array.isArray(node) ? node : root;
    if (target !== null && typeof target === 'object')
      Object.defineProperty(target, m.key, {
        value: m.value,
        enumerable: true,
        configurable: true,
        writable: true,
      });
    return root;
  }
  if (parent === undefined || key === undefined) return m.kind === 'set' ? m.value : undefined;
  if (m.kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete (parent as Record<string, unknown>)[key];
  } else {
    (parent as Record<string | number, unknown>)[key] = m.value;
  }
  return root;
}

/** Mostly valid values, sometimes one of the invalid ones, so most templates pass validation. */
const pick = <T>(valid: T[], invalid: T[]) =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...valid) },
    { weight: 1, arbitrary: fc.constantFrom(...invalid) },
  );

/** Characters no label may hold (docs/API.md, "Hardening"): control, zero-width, bidi, terminal escapes, separators. */
export const UNPRINTABLE = [
  '\u200b',
  '\u0000',
  '\u001b[31m',
  '\u202e',
  '\u2066',
  '\ufeff',
  '\u2028',
  '\u0007',
];
/** Mostly the given label, sometimes with an unprintable character spliced in. */
const tainted = (label: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 5, arbitrary: label },
    {
      weight: 1,
      arbitrary: fc
        .tuple(label, fc.constantFrom(...UNPRINTABLE), fc.nat())
        .map(([s, c, at]) => s.slice(0, at % (s.length + 1)) + c + s.slice(at % (s.length + 1))),
    },
  );

const iso = fc
  .date({ min: new Date('2020-01-01'), max: new Date('2035-01-01'), noInvalidDate: true })
  .map((d) => d.toISOString());

/** A well-formed body for each route (before mutation), built over the fixture's real ids. */
function template(rule: RouteRule, fx: Fixtures): fc.Arbitrary<unknown> {
  const id = fc.string({
    minLength: 1,
    maxLength: 12,
    unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz_0123456789'),
  });
  const key = `${rule.method} ${rule.path}`;
  switch (key) {
    case 'POST /v1/mandates':
      return fc.record(
        {
          principal: fc.oneof(
            tainted(id),
            fc.record(
              { id: tainted(id), type: fc.constantFrom('person', 'organization', 'agent', 'robot') },
              { requiredKeys: ['id'] },
            ),
          ),
          delegate: fc.oneof(
            id,
            fc.record(
              { id, type: fc.constantFrom('person', 'agent'), name: tainted(fc.string({ maxLength: 20 })) },
              { requiredKeys: ['id'] },
            ),
          ),
          scope: fc.record(
            {
              actions: fc.array(pick(['payments:*', 'payments:create', '*', 'a:b:*'], ['bad action', '']), {
                maxLength: 3,
              }),
              resources: fc.array(pick(['acct:1', 'acct:*'], ['']), { maxLength: 2 }),
              constraints: fc.record(
                {
                  max_amount: fc.oneof(
                    { weight: 5, arbitrary: fc.nat() },
                    { weight: 1, arbitrary: fc.constantFrom(-1, 1.5) },
                  ),
                  currency: pick(['EUR', 'USD'], ['eur', 'EURO']),
                },
                { requiredKeys: [] },
              ),
            },
            { requiredKeys: [] },
          ),
          valid_from: fc.oneof(
            { weight: 5, arbitrary: fc.oneof(iso, fc.constant(null)) },
            { weight: 1, arbitrary: fc.constantFrom('2026-02-30T00:00:00Z', 'yesterday') },
          ),
          // Far in the future only: no mandate may expire while the fuzz runs (nothing sweeps, but reads derive EXPIRED).
          expires_at: pick<string | null>(
            ['2099-01-01T00:00:00.000Z', null, '2099-01-01T00:00:00+05:30'],
            ['2000-01-01T00:00:00Z'],
          ),
          metadata: fc.dictionary(
            tainted(fc.string({ minLength: 1, maxLength: 41 })),
            tainted(fc.string({ maxLength: 10 })),
            {
              maxKeys: 3,
            },
          ),
        },
        { requiredKeys: ['principal', 'delegate'] },
      );
    case 'POST /v1/mandates/:id/suspend':
    case 'POST /v1/mandates/:id/reactivate':
    case 'POST /v1/mandates/:id/revoke':
      return fc.record({ reason: fc.string({ maxLength: 30 }) }, { requiredKeys: [] });
    case 'POST /v1/verify':
      return fc.record(
        {
          mandate_id: fc.oneof(
            { weight: 4, arbitrary: live(fx.mandatesA, fx.mandatesB) },
            { weight: 1, arbitrary: id },
          ),
          action: pick(['payments:create', 'payments:refund', 'x', '*'], ['']),
          amount: fc.oneof(
            { weight: 5, arbitrary: fc.nat(100_000) },
            { weight: 1, arbitrary: fc.constantFrom(-1, 1.5) },
          ),
          currency: pick(['EUR', 'USD'], ['eur']),
          resource: fc.constantFrom('acct:1', 'acct:2'),
          delegate_id: id,
        },
        { requiredKeys: ['mandate_id', 'action'] },
      );
    case 'POST /v1/tenants/:tenantId/api-keys':
      return fc.record(
        {
          name: tainted(fc.string({ minLength: 1, maxLength: 20 }).filter((n) => n.trim().length > 0)),
          scopes: fc.array(
            pick(
              ['mandates:read', 'mandates:write', 'verify', 'events:read', 'tenants:admin'],
              ['platform:*'],
            ),
            { maxLength: 3 },
          ),
        },
        { requiredKeys: ['name'] },
      );
    case 'POST /v1/tenants/:tenantId/role-assignments':
      return fc.record({
        subject_id: fc.oneof(
          tainted(id).map((s) => `dashboard:${s}`),
          id.map((s) => `oidc:x:${s}`),
          id,
        ),
        roles: fc.array(
          pick(['tenant_admin', 'tenant_operator', 'tenant_viewer', 'tenant_auditor'], ['platform_admin']),
          { minLength: 1, maxLength: 2 },
        ),
      });
    case 'PATCH /v1/tenants/:tenantId/role-assignments/:id':
      return fc.record(
        {
          roles: fc.array(pick(['tenant_operator', 'tenant_viewer'], ['platform_admin']), {
            minLength: 1,
            maxLength: 2,
          }),
          subject_id: pick(['dashboard:alice'], ['dashboard:bob']),
        },
        { requiredKeys: ['roles'] },
      );
    case 'PUT /v1/tenants/:tenantId/widget-config':
      return fc.record(
        {
          allowed_origins: fc.array(
            pick(
              ['https://shop.example.com', 'https://b.example'],
              ['http://x.example', 'https://*.example.com', 'https://a.example/path'],
            ),
            { maxLength: 3 },
          ),
          theme: fc.record(
            {
              primary_color: pick(['#1a2b3c'], ['red', '#fff']),
              logo_url: pick(['https://x.example/logo.png'], ['javascript:alert(1)']),
            },
            { requiredKeys: [] },
          ),
          locale: pick<string | null>(['en', 'de-CH', null], ['not a locale']),
        },
        { requiredKeys: ['allowed_origins'] },
      );
    case 'POST /v1/onboarding/request':
      return fc.record(
        {
          organization_name: tainted(fc.string({ minLength: 1, maxLength: 20 })),
          contact_email: pick(['ops@globex.example.com'], ['not-an-email', 'a@b', '']),
          country: pick(['DE', 'FR'], ['de', 'XXX']),
          use_case: fc.string({ maxLength: 20 }),
        },
        { requiredKeys: ['organization_name', 'contact_email'] },
      );
    case 'POST /v1/identity-verifications':
      return fc.record({ purpose: pick(['mandate', 'sign_in'], ['other', '']) });
    case 'POST /v1/identity-verifications/sign-in':
      return fc.record({ tenant_id: pick([fx.tenantA, fx.tenantB], ['tnt_unknown', '']) });
    case 'POST /v1/identity-verifications/:id/poll':
    case 'POST /v1/identity-verifications/:id/token':
      return fc.record({ poll_token: pick([fx.signInA.pollToken], ['idp_wrong', '']) });
    case 'POST /v1/platform/tenants':
      return fc.record(
        {
          name: tainted(fc.string({ minLength: 1, maxLength: 20 })),
          plan: pick(['beta', 'enterprise'], ['free']),
        },
        { requiredKeys: ['name'] },
      );
    case 'POST /v1/platform/onboarding-requests/:id/approve':
      return fc.record(
        {
          plan: pick(['beta', 'enterprise'], ['gold']),
          name: tainted(fc.string({ minLength: 1, maxLength: 10 })),
          admin_subject_id: tainted(id).map((s) => `dashboard:${s}`),
        },
        { requiredKeys: [] },
      );
    case 'POST /v1/webhook-endpoints':
    case 'PATCH /v1/webhook-endpoints/:id':
      return fc.record(
        {
          // Refused without a DNS lookup: a private address, another scheme, plain http elsewhere.
          url: pick([fx.webhookReceiverUrl], ['http://192.168.1.7/hook', 'ftp://127.0.0.1/x', 'not a url']),
          event_types: pick(
            [['*'], ['MANDATE_REVOKED'], ['MANDATE_CREATED', 'MANDATE_REVOKED']],
            [[], ['NO_SUCH_EVENT'], ['*', '*']],
          ),
          description: tainted(fc.string({ maxLength: 20 })),
          ...(key.startsWith('PATCH') ? { status: pick(['ENABLED', 'DISABLED'], ['GONE']) } : {}),
        },
        { requiredKeys: key.startsWith('POST') ? ['url', 'event_types'] : [] },
      );
    case 'POST /v1/platform/onboarding-requests/:id/reject':
      return fc.record({ reason: fc.string({ maxLength: 30 }) }, { requiredKeys: [] });
    case 'POST /v1/mandates/:id/authorizations':
      return fc.record(
        {
          action: pick(['payments:create', 'payments:refund'], ['']),
          amount: fc.oneof(
            { weight: 5, arbitrary: fc.integer({ min: 1, max: 10_000 }) },
            { weight: 1, arbitrary: fc.constantFrom(0, -1, 1.5) },
          ),
          currency: pick(['EUR', 'USD'], ['eur']),
          hold_seconds: pick([60, 900], [5, 10_000_000]),
        },
        { requiredKeys: ['action', 'amount', 'currency'] },
      );
    case 'POST /v1/authorizations/:id/capture':
      return fc.record({ amount: fc.oneof(fc.nat(200), fc.constantFrom(-1, 1.5)) }, { requiredKeys: [] });
    case 'POST /v1/access/v1/evaluation':
      return authzenEvaluation(fx);
    case 'POST /v1/access/v1/evaluations':
      return fc.record(
        {
          evaluations: fc.array(authzenEvaluation(fx), { minLength: 1, maxLength: 3 }),
          options: fc.record({
            evaluations_semantic: pick(
              ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'],
              ['all'],
            ),
          }),
        },
        { requiredKeys: ['evaluations'] },
      );
    default:
      return fc.constantFrom({}, { unexpected: true });
  }
}

/** An AuthZEN evaluation (docs/API.md#authzen) of one of the tenants' mandates. */
const authzenEvaluation = (fx: Fixtures) =>
  fc.record(
    {
      subject: fc.record({ type: fc.constantFrom('agent', 'user'), id: pick(['agent_42'], ['']) }),
      action: fc.record({ name: pick(['payments:create', 'transfers:create'], ['']) }),
      resource: fc.record({ type: pick(['mandate'], ['account']), id: live(fx.mandatesA, fx.mandatesB) }),
      context: fc.record({ amount: fc.nat(1_000), currency: pick(['EUR'], ['eur']) }, { requiredKeys: [] }),
    },
    { requiredKeys: ['subject', 'action', 'resource'] },
  );

/**
 * One of the ids in these pools, read when the value is generated: the test adds the mandates the
 * fuzz creates, so lifecycle calls keep finding mandates that are not revoked yet.
 */
const live = (...pools: string[][]) =>
  fc.nat().map((i) => {
    const total = pools.reduce((n, p) => n + p.length, 0);
    let k = i % total;
    for (const p of pools) {
      if (k < p.length) return p[k]!;
      k -= p.length;
    }
    throw new Error('unreachable');
  });

function paramValue(name: string, routePattern: string, fx: Fixtures): fc.Arbitrary<string> {
  const anyId = live(fx.mandatesA, fx.mandatesB, fx.roleAssignmentsA, fx.onboardingIds, fx.eventsA);
  // Mostly the kind of id the route serves, sometimes another kind.
  const idPool = routePattern.startsWith('/v1/mandates')
    ? fc.oneof({ weight: 5, arbitrary: live(fx.mandatesA) }, { weight: 1, arbitrary: live(fx.mandatesB) })
    : routePattern.includes('role-assignments')
      ? live(fx.roleAssignmentsA)
      : routePattern.includes('onboarding')
        ? live(fx.onboardingIds)
        : routePattern.startsWith('/v1/events')
          ? live(fx.eventsA)
          : routePattern.startsWith('/v1/identity-verifications')
            ? live(fx.identityVerificationsA, [fx.signInA.id])
            : routePattern.startsWith('/v1/status-lists')
              ? live(fx.statusLists)
              : routePattern.includes('/deliveries')
                ? name === 'deliveryId'
                  ? live(fx.webhookDeliveriesA)
                  : fc.constant(fx.webhookDeliveryEndpointA)
                : routePattern.startsWith('/v1/webhook-endpoints')
                  ? live(fx.webhookEndpointsA)
                  : routePattern.startsWith('/v1/authorizations')
                    ? live(fx.authorizationsA)
                    : anyId;
  const real =
    name === 'tenantId'
      ? fc.constantFrom(fx.tenantA, fx.tenantA, fx.tenantA, fx.tenantB)
      : name === 'keyId'
        ? live(fx.victimKeysA, fx.keysB)
        : fc.oneof({ weight: 3, arbitrary: idPool }, { weight: 1, arbitrary: anyId });
  return fc.oneof(
    { weight: 8, arbitrary: real },
    { weight: 1, arbitrary: fc.constantFrom(...ODD_SEGMENTS) },
    {
      weight: 1,
      arbitrary: fc
        .string({ unit: pathChar, minLength: 1, maxLength: 30 })
        .map((s) => s.replace(/\//g, ''))
        .filter((s) => s.length > 0),
    },
  );
}

function routePath(rule: RouteRule, fx: Fixtures): fc.Arbitrary<string> {
  const segments = rule.path.split('/').slice(1);
  const parts = segments.map((s) =>
    s.startsWith(':') ? paramValue(s.slice(1), rule.path, fx) : fc.constant(s),
  );
  return fc
    .tuple(
      fc.tuple(...parts),
      fc.oneof(
        { weight: 6, arbitrary: fc.constant('keep') },
        { weight: 2, arbitrary: fc.constant('unversioned') },
        { weight: 1, arbitrary: fc.constant('trailing') },
        { weight: 1, arbitrary: fc.constantFrom('double', 'upper', 'v2', 'extra', 'dot') },
      ),
    )
    .map(([values, form]) => {
      const path = '/' + values.join('/');
      switch (form) {
        case 'unversioned':
          return path.replace(/^\/v1/, '') || '/';
        case 'trailing':
          return path + '/';
        case 'double':
          return path.replace('/', '//');
        case 'upper':
          return path.replace('/v1', '/V1');
        case 'v2':
          return path.replace('/v1', '/v2');
        case 'extra':
          return path + '/extra';
        case 'dot':
          return path.replace(/\/([^/]+)$/, '/./$1');
        default:
          return path;
      }
    });
}

const randomPath = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        'v1',
        'mandates',
        'tenants',
        'events',
        'platform',
        'verify',
        '.well-known',
        'openapi.json',
        ...ODD_SEGMENTS,
      ),
      fc.string({ unit: pathChar, maxLength: 12 }),
    ),
    { maxLength: 6 },
  )
  .map((segments) => '/' + segments.join('/'));

const queryValue = fc.oneof(
  fc.constantFrom(
    '5',
    '0',
    '1',
    '100',
    '101',
    '-1',
    'abc',
    '',
    '1e3',
    '5.5',
    'ACTIVE',
    'REVOKED',
    'nope',
    'MANDATE_CREATED,API_CALL',
    'API_CALL,,',
    '2026-01-01T00:00:00Z',
    'not-a-date',
    'hour',
    'day',
    'bWR0Xw',
    '%',
    '%zz',
    'x'.repeat(3000),
  ),
  fc.string({ unit: headerChar, maxLength: 20 }).map(encodeURIComponent),
);
const queryKey = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'limit',
      'cursor',
      'state',
      'type',
      'resource_id',
      'key_id',
      'since',
      'until',
      'principal_id',
      'delegate_id',
      'status',
      'subject_id',
      'bucket',
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'a[b]',
      'limit[]',
      '__proto__',
      'constructor',
      'hasOwnProperty',
      '',
      '%',
      'toString',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: headerChar, maxLength: 10 }).map(encodeURIComponent) },
);
const query = fc.oneof(
  { weight: 6, arbitrary: fc.constant('') },
  {
    weight: 4,
    arbitrary: fc
      .array(fc.tuple(queryKey, queryValue), { minLength: 1, maxLength: 4 })
      .map((pairs) => '?' + pairs.map(([k, v]) => `${k}=${v}`).join('&')),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '?',
      '?&&',
      '?limit',
      '?limit=1&limit=2',
      '?=x',
      '?%',
      '?a=%E0%A4%A',
      '?' + 'a=1&'.repeat(500),
    ),
  },
);

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'PURGE', 'PROPFIND'];

function authHeaders(fx: Fixtures): fc.Arbitrary<Record<string, string>> {
  return fc.oneof(
    { weight: 12, arbitrary: fc.constant({ authorization: `Bearer ${fx.authA}` }) },
    { weight: 1, arbitrary: fc.constant({ 'x-api-key': fx.authA }) },
    { weight: 1, arbitrary: fc.constant({ 'x-api-key': fx.secretA }) },
    { weight: 2, arbitrary: fc.constant({ authorization: `Bearer ${fx.readOnlyA}` }) },
    { weight: 2, arbitrary: fc.constant({ authorization: `Bearer ${fx.authB}` }) },
    { weight: 3, arbitrary: fc.constant({ authorization: `Bearer ${fx.operatorToken}` }) },
    { weight: 1, arbitrary: fc.constant({}) },
    {
      weight: 2,
      arbitrary: fc.constantFrom<Record<string, string>>(
        { authorization: 'Bearer' },
        { authorization: 'Bearer ' },
        { authorization: 'Basic YTpi' },
        { authorization: 'Bearer a.b.c' },
        { authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.' },
        { authorization: `Bearer ${fx.tenantA}:` },
        { authorization: `Bearer ${fx.tenantB}:${fx.secretA}` },
        { authorization: 'Bearer tnt_x:y' },
        { authorization: `bearer   ${fx.authA}  ` },
        { 'x-api-key': '' },
        { 'x-api-key': `${fx.tenantA}:` },
        { 'x-api-key': ':' },
        { authorization: `Bearer ${fx.authA}`, 'x-api-key': 'other' },
      ),
    },
    { weight: 1, arbitrary: headerString(80).map((v) => ({ authorization: v })) },
  );
}

const contentType = fc.oneof(
  { weight: 10, arbitrary: fc.constant('application/json') },
  { weight: 2, arbitrary: fc.constant(undefined) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'text/plain',
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'application/json; charset=koi8-r',
      'application/json; charset=bogus',
      'application/x-www-form-urlencoded',
      'application/vnd.api+json',
      'multipart/form-data; boundary=x',
      'application/jsonp',
      'APPLICATION/JSON',
      '',
      ';;;',
    ),
  },
  { weight: 1, arbitrary: headerString(40) },
);

function bodyFor(rule: RouteRule | undefined, fx: Fixtures): fc.Arbitrary<Buffer | undefined> {
  const json = (v: unknown) => Buffer.from(JSON.stringify(v) ?? 'null');
  const valid = rule
    ? fc.tuple(template(rule, fx), mutation).map(([t, m]) => json(mutate(t, m)))
    : fc.constant(json({}));
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 10, arbitrary: valid },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map(json) },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(
          '{',
          '{"a":',
          '{"principal":"x",}',
          "{'a':1}",
          'null',
          '"string"',
          '42',
          'true',
          '[]',
          '\ufeff{}',
          '{"a":1}garbage',
          'NaN',
          '{"a":1e999}',
          '{"__proto__":{"polluted":true},"principal":"p","delegate":"d"}',
          '{"constructor":{"prototype":{"polluted":true}}}',
          'a=1&b=2',
          '\u0000',
        )
        .map((s) => Buffer.from(s)),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(1_000, 10_000, 30_000)
        .chain((depth) =>
          fc.constantFrom(
            Buffer.from('['.repeat(depth) + ']'.repeat(depth)),
            Buffer.from(
              '{"principal":'.repeat(Math.floor(depth / 14)) + '1' + '}'.repeat(Math.floor(depth / 14)),
            ),
            Buffer.from(
              `{"principal":"p","delegate":"d","metadata":${'{"a":'.repeat(Math.floor(depth / 6))}1${'}'.repeat(Math.floor(depth / 6))}}`,
            ),
          ),
        ),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(60_000, 65_536, 70_000, 200_000)
        .map((n) =>
          Buffer.from(JSON.stringify({ principal: 'x'.repeat(n), delegate: 'd', name: 'n', reason: 'r' })),
        ),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)) },
  );
}

/**
 * A well-formed call of one route by the right caller (a valid body, JSON, no query string), so the
 * fuzz reaches the services' domain code and changes state that later requests run into.
 */
function cleanRequest(rule: RouteRule, fx: Fixtures): fc.Arbitrary<FuzzRequest> {
  const auth: fc.Arbitrary<Record<string, string>> =
    rule.auth === 'operator'
      ? fc.constant({ authorization: `Bearer ${fx.operatorToken}` })
      : rule.auth === 'public'
        ? fc.constant({})
        : fc.oneof(
            { weight: 9, arbitrary: fc.constant({ authorization: `Bearer ${fx.authA}` }) },
            { weight: 1, arbitrary: fc.constant({ authorization: `Bearer ${fx.authB}` }) },
          );
  const hasBody = rule.method !== 'GET';
  return fc
    .record({
      path: routePath(rule, fx),
      auth,
      body: hasBody
        ? fc.tuple(template(rule, fx), poison).map(([v, p]) => {
            const bad = poisoned(v, p);
            return bad ?? { body: Buffer.from(JSON.stringify(v)), reason: undefined };
          })
        : fc.constant(undefined),
      idempotencyKey: fc.oneof(
        { weight: 6, arbitrary: fc.constant(undefined) },
        { weight: 2, arbitrary: fc.constant('unique') },
        { weight: 1, arbitrary: fc.constantFrom('fuzz-key-1', 'fuzz-key-2', 'fuzz-key-3') },
      ),
    })
    .map(({ path, auth: a, body, idempotencyKey }) => {
      path += cleanQuery(rule, fx);
      const headers: Record<string, string> = { ...a, 'x-request-id': uniqueRequestId() };
      if (body) headers['content-type'] = 'application/json';
      if (idempotencyKey !== undefined)
        headers['idempotency-key'] = idempotencyKey === 'unique' ? `k-${uniqueRequestId()}` : idempotencyKey;
      return {
        method: rule.method,
        path,
        headers,
        body: body?.body,
        route: `${rule.method} ${rule.path}`,
        ...(body?.reason ? { mustReject: body.reason } : {}),
      };
    });
}

/** The query a route cannot answer below 400 without: the proofs name a signed checkpoint's size. */
function cleanQuery(rule: RouteRule, fx: Fixtures): string {
  if (rule.path === '/v1/events/:id/inclusion-proof') return `?tree_size=${fx.checkpointSizeA}`;
  if (rule.path === '/v1/audit/consistency-proof')
    return `?from=${fx.checkpointSizeA}&to=${fx.checkpointSizeA}`;
  return '';
}

/** One request: a route of the table (mostly) or a random path, clean or with everything around it generated. */
export function requestArbitrary(fx: Fixtures): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...ROUTES).chain((rule) => cleanRequest(rule, fx)) },
    { weight: 3, arbitrary: hostileRequest(fx) },
  );
}

function hostileRequest(fx: Fixtures): fc.Arbitrary<FuzzRequest> {
  const fromRoute = fc.constantFrom(...ROUTES).chain((rule) =>
    fc.record({
      rule: fc.constant(rule),
      method: fc.oneof(
        { weight: 8, arbitrary: fc.constant(rule.method as string) },
        { weight: 1, arbitrary: fc.constantFrom(...METHODS) },
      ),
      path: routePath(rule, fx),
      body: bodyFor(rule, fx),
    }),
  );
  const random = fc.record({
    rule: fc.constant(undefined),
    method: fc.constantFrom(...METHODS),
    path: randomPath,
    body: bodyFor(undefined, fx),
  });
  return fc
    .record({
      target: fc.oneof({ weight: 12, arbitrary: fromRoute }, { weight: 1, arbitrary: random }),
      query,
      auth: authHeaders(fx),
      contentType,
      idempotencyKey: fc.oneof(
        { weight: 8, arbitrary: fc.constant(undefined) },
        { weight: 3, arbitrary: fc.constantFrom('fuzz-key-1', 'fuzz-key-2', 'fuzz-key-3') },
        { weight: 1, arbitrary: headerString(300) },
      ),
      requestId: fc.oneof(
        { weight: 9, arbitrary: fc.constant('unique') },
        {
          weight: 1,
          arbitrary: fc.constantFrom('has spaces', 'x'.repeat(200), '\u00e9\u00e9', '', '<script>'),
        },
      ),
      extra: fc.oneof(
        { weight: 8, arbitrary: fc.constant({}) },
        {
          weight: 2,
          arbitrary: fc.record(
            {
              'x-tenant-id': fc.constantFrom(fx.tenantA, fx.tenantB, 'tnt_nope', ''),
              accept: fc.constantFrom('application/json', 'text/html', '*/*', ''),
              'x-forwarded-for': fc.constantFrom('1.2.3.4', 'garbage', '::1, 10.0.0.1'),
              'x-internal-token': fc.constantFrom('forged', 'eyJhbGciOiJIUzI1NiJ9.e30.x'),
              'x-http-method-override': fc.constantFrom('DELETE', 'GET'),
              'idempotent-replayed': fc.constant('true'),
            },
            { requiredKeys: [] },
          ),
        },
      ),
    })
    .map(({ target, query: q, auth, contentType: ct, idempotencyKey, requestId, extra }) => {
      const headers: Record<string, string> = { ...extra, ...auth };
      if (ct !== undefined) headers['content-type'] = ct;
      if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
      // A unique sane id (or junk the gateway replaces with its own): the response's X-Request-Id names this request.
      headers['x-request-id'] = requestId === 'unique' ? uniqueRequestId() : requestId;
      const body = target.method === 'HEAD' ? undefined : target.body;
      return {
        method: target.method,
        path: target.path + q,
        headers,
        body,
        route: target.rule ? `${target.rule.method} ${target.rule.path}` : 'random',
      };
    });
}
