import type { z } from 'zod';
import type { RouteContract } from '@mandate/shared/contract';
import * as auditSchemas from '@mandate/audit';
import * as identitySchemas from '@mandate/identity';
import * as mandatesSchemas from '@mandate/mandates';
import * as verifySchemas from '@mandate/verify';
import { CONTRACTS } from '@mandate/gateway';

/**
 * Issue 12, item 7: unknown members are 400 everywhere, at every depth. Every request schema (a
 * body or a query) of every service is walked, and every object inside it must be strict: a
 * plain z.object would quietly accept, store and sign `principal.nickname`.
 */
type Def = { type: string } & Record<string, unknown>;
const defOf = (schema: unknown) => (schema as { _zod: { def: Def } })._zod.def;

/** The paths of the objects in `schema` that accept unknown members. */
function lenientObjects(schema: unknown, at = '(root)', seen = new Set<unknown>()): string[] {
  if (seen.has(schema)) return [];
  seen.add(schema);
  const def = defOf(schema);
  const walk = (inner: unknown, path = at) => lenientObjects(inner, path, seen);
  switch (def.type) {
    case 'object': {
      const catchall = def.catchall as unknown;
      const strict = catchall !== undefined && defOf(catchall).type === 'never';
      const shape = def.shape as Record<string, unknown>;
      return [
        ...(strict ? [] : [at]),
        ...Object.entries(shape).flatMap(([key, value]) =>
          walk(value, at === '(root)' ? key : `${at}.${key}`),
        ),
      ];
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return walk(def.innerType);
    case 'pipe':
      return [...walk(def.in), ...walk(def.out)];
    case 'array':
      return walk(def.element, `${at}[]`);
    case 'union':
      return (def.options as unknown[]).flatMap((o) => walk(o));
    case 'intersection':
      return [...walk(def.left), ...walk(def.right)];
    case 'record':
      return walk(def.valueType, `${at}{}`);
    case 'lazy':
      return walk((def.getter as () => unknown)());
    default:
      return [];
  }
}

/** Request schemas by service: what parses a body or a query string. */
const requestSchemas: Record<string, Record<string, z.ZodType>> = {
  mandates: {
    createMandateBody: mandatesSchemas.createMandateBody,
    lifecycleBody: mandatesSchemas.lifecycleBody,
    listMandatesQuery: mandatesSchemas.listMandatesQuery,
    evidenceSignatureBody: mandatesSchemas.evidenceSignatureBody,
  },
  verify: { verifyRequestSchema: verifySchemas.verifyRequestSchema },
  identity: Object.fromEntries(
    Object.entries(identitySchemas).filter(([name]) => /(Body|Query)$/.test(name)),
  ) as Record<string, z.ZodType>,
  audit: { listEventsQuerySchema: auditSchemas.listEventsQuerySchema },
};

describe('request schemas are strict at every depth', () => {
  it('when the identity schemas are gathered by name, then every body and query is there', () => {
    expect(Object.keys(requestSchemas.identity!).sort()).toEqual(
      expect.arrayContaining([
        'createTenantBody',
        'widgetConfigBody',
        'createApiKeyBody',
        'onboardingRequestBody',
      ]),
    );
  });

  it('when the walker meets a plain z.object nested in a strict one, then it names it (the check can fail)', async () => {
    const { z: zod } = await import('zod');
    const lenient = zod.strictObject({ principal: zod.object({ id: zod.string() }).optional() });
    expect(lenientObjects(lenient)).toEqual(['principal']);
  });

  /** Every body and query a public route's contract declares: a new route is walked by existing. */
  const contractSchemas = (CONTRACTS as readonly RouteContract[]).flatMap((route) =>
    (['query', 'body'] as const)
      .filter((part) => route.request?.[part] !== undefined)
      .map((part) => [`${route.operationId} ${part}`, route.request![part]!] as const),
  );
  it.each(contractSchemas)(
    'when the contract of %s is walked, then no object in it accepts unknown members',
    (_name, schema) => {
      expect(lenientObjects(schema)).toEqual([]);
    },
  );

  for (const [service, schemas] of Object.entries(requestSchemas)) {
    it.each(Object.entries(schemas))(
      `when ${service}'s %s is walked, then no object in it accepts unknown members`,
      (_name, schema) => {
        expect(lenientObjects(schema)).toEqual([]);
      },
    );
  }

  it.each([
    [
      'mandates',
      mandatesSchemas.createMandateBody,
      { principal: { id: 'a', nickname: 'Al' }, delegate: 'b' },
      'nickname',
    ],
    [
      'mandates',
      mandatesSchemas.createMandateBody,
      { principal: 'a', delegate: { id: 'b', owner: 'x' } },
      'owner',
    ],
    [
      'mandates',
      mandatesSchemas.createMandateBody,
      { principal: 'a', delegate: 'b', scope: { constraints: { max_amount: 1, per: 'day' } } },
      'per',
    ],
    ['identity', identitySchemas.widgetConfigBody, { allowed_origins: [], theme: { font: 'x' } }, 'font'],
  ])(
    'when a %s body has an unknown nested member, then it is refused naming it',
    (_service, schema, body, member) => {
      const result = (schema as z.ZodType).safeParse(body);
      expect(result.success).toBe(false);
      expect(JSON.stringify(result.error?.issues)).toContain(member);
    },
  );
});
