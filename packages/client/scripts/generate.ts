/**
 * Writes src/generated.ts from the public route contracts (the same table the gateway routes by and
 * the OpenAPI document is built from): the operations' runtime table (method, path, parameters,
 * how the body and the answer travel) and their request and answer types, expanded by the
 * TypeScript compiler from the contracts' zod schemas into plain types, so that the published
 * package carries no zod and no workspace import; and test/contract-types.check.ts, which makes
 * the type check fail when a generated type no longer equals its contract's. A route added to a
 * contract gets its method by running this again (`npm run generate -w @mandate/client`);
 * test/generated.test.ts and the type check fail until then.
 *
 *   tsx packages/client/scripts/generate.ts          write both files
 *   tsx packages/client/scripts/generate.ts --check  exit 1 when either is out of date
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { z } from 'zod';
import { EVENT_TYPES } from '@mandate/shared/events';
import { API_KEY_SCOPES, type RouteContract } from '@mandate/shared/contract';
import { CONTRACTS } from '@mandate/gateway';
import { PERMISSION_DESCRIPTIONS, PLANS, ROLES, ROLE_PERMISSIONS } from '@mandate/identity';
import { MANDATE_STATES } from '@mandate/mandates';

const PACKAGE = path.resolve(__dirname, '..');
const ROOT = path.resolve(PACKAGE, '../..');
const TARGET = path.join(PACKAGE, 'src/generated.ts');
const CHECKS = path.join(PACKAGE, 'test/contract-types.check.ts');

/** Tags whose operations are methods of the client itself rather than of a namespace. */
const TOP_LEVEL_TAGS = new Set(['gateway', 'verify']);
/** A tag's namespace when its name alone does not name the resource its operations act on. */
const NAMESPACE_OF_TAG: Record<string, string> = { roles: 'roleAssignments', widget: 'widgetConfig' };

const pascal = (s: string) => s.replace(/(^|[-_ ])([a-z])/g, (_m, _sep, c: string) => c.toUpperCase());
const camel = (s: string) => pascal(s).replace(/^[A-Z]/, (c) => c.toLowerCase());
const idOf = (schema: z.core.$ZodType | undefined) =>
  schema ? (z.globalRegistry.get(schema)?.id as string | undefined) : undefined;

interface Operation {
  route: RouteContract;
  namespace: string | undefined;
  name: string;
  params: string[];
  body: 'none' | 'required' | 'optional';
  query: boolean;
  list: boolean;
  /** Success statuses whose body is JSON (a 304 has none). */
  statuses: number[];
  types: { response: string; item?: string; body?: string; query?: string };
}

function isPage(schema: z.ZodType): schema is z.ZodObject<{ data: z.ZodArray<z.ZodType> }> {
  const shape = (schema as z.ZodObject).shape as Record<string, z.ZodType> | undefined;
  return !!shape && 'data' in shape && 'has_more' in shape && 'next_cursor' in shape;
}

function describe(route: RouteContract): Operation {
  const tag = route.tags?.[0] ?? route.service;
  const namespace = TOP_LEVEL_TAGS.has(tag) ? undefined : camel(NAMESPACE_OF_TAG[tag] ?? tag);
  // createMandate in mandates → create; a noun that is not the namespace's resource stays.
  const noun = namespace ? pascal(namespace) : undefined;
  const [, verb, rest] = /^([a-z]+)(.*)$/.exec(route.operationId)!;
  const singular = noun?.replace(/s$/, '');
  const name = noun && (rest === noun || rest === singular) ? verb! : route.operationId;
  const statuses = Object.keys(route.responses)
    .map(Number)
    .filter((status) => status !== 304);
  const first = route.responses[statuses[0]!]!.schema;
  const op = pascal(route.operationId);
  const list = !!route.request?.query && isPage(first);
  const request = route.request ?? {};
  const body = request.body ? (request.bodyRequired === false ? 'optional' : 'required') : 'none';
  return {
    route,
    namespace,
    name,
    params: [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!),
    body,
    query: !!request.query,
    list,
    statuses,
    types: {
      response: statuses.length === 1 ? (idOf(first) ?? `${op}Response`) : `${op}Response`,
      ...(list
        ? { item: idOf((first as z.ZodObject<{ data: z.ZodArray }>).shape.data.element) ?? `${op}Item` }
        : {}),
      ...(body !== 'none' ? { body: idOf(request.bodyDoc ?? request.body) ?? `${op}Request` } : {}),
      ...(request.query ? { query: `${op}Query` } : {}),
    },
  };
}

/** What the probe and the checks declare first: the contracts' types, and how an operation's are read. */
const PRELUDE = [
  "import type { z } from 'zod';",
  "import type { routes as mandates } from '@mandate/mandates';",
  "import type { routes as verify } from '@mandate/verify';",
  "import type { routes as audit } from '@mandate/audit';",
  "import type { routes as identity } from '@mandate/identity';",
  "import type { gatewayContract } from '@mandate/gateway';",
  "import type { EVENT_DATA_SCHEMAS } from '@mandate/shared/events';",
  'type EventData<T extends keyof typeof EVENT_DATA_SCHEMAS> = z.output<(typeof EVENT_DATA_SCHEMAS)[T]>;',
  'type All = (typeof mandates)[keyof typeof mandates] | (typeof verify)[keyof typeof verify] |',
  '  (typeof audit)[keyof typeof audit] | (typeof identity)[keyof typeof identity] | (typeof gatewayContract)[number];',
  'type Op<K> = Extract<All, { operationId: K }>;',
  "type Res<K, S extends number> = Op<K>['responses'] extends { [s in S]: { schema: infer Z extends z.ZodType } } ? z.output<Z> : never;",
  'type Req<K> = Op<K> extends { request: infer R } ? R : never;',
  'type Body<K> = Req<K> extends { bodyDoc: infer B extends z.ZodType } ? z.input<B> : Req<K> extends { body: infer B extends z.ZodType } ? z.input<B> : never;',
  // A query member's input is unknown where zod coerces it (limit): its output type says what to send.
  'type QueryOf<I, O> = { [K in keyof I & keyof O]?: unknown extends I[K] ? O[K] : Exclude<I[K], undefined> };',
  'type Query<K> = Req<K> extends { query: infer Q extends z.ZodType } ? QueryOf<z.input<Q>, z.output<Q>> : never;',
];

/**
 * Vocabularies several answers share, named so that each is spelled once in src/generated.ts and an
 * integrator can name it too (a failed verification's reason, a mandate's state, who acted, a tenant's access snapshot).
 */
const VOCABULARIES: Record<string, string> = {
  IdentityVerificationReason: "NonNullable<Res<'pollSignInVerification', 200>['reason']>",
  MandateState: "Res<'createMandate', 201>['state']",
  AccessSnapshot: "Res<'putAccessBaseline', 200>['snapshot']",
  Actor: "Res<'putAccessBaseline', 200>['saved_by']",
};

/** `MANDATE_REVOKED` → `MandateRevokedEventData`: the name of an event type's `data`. */
const eventDataName = (type: string) =>
  `${type.toLowerCase().replace(/(^|_)([a-z])/g, (_m, _sep, c: string) => c.toUpperCase())}EventData`;

/** Each named type and its expression in terms of the contracts (the probe's aliases), in order. */
function namedTypes(operations: Operation[]): Map<string, string> {
  const named = new Map<string, string>();
  const declare = (name: string, type: string) => {
    if (!named.has(name)) named.set(name, type);
  };
  for (const op of operations) {
    const id = `'${op.route.operationId}'`;
    if (op.list) declare(op.types.item!, `Res<${id}, 200>['data'][number]`);
    else if (op.statuses.length === 1) declare(op.types.response, `Res<${id}, ${op.statuses[0]}>`);
    else declare(op.types.response, op.statuses.map((s) => `Res<${id}, ${s}>`).join(' | '));
    if (op.types.body) declare(op.types.body, `Body<${id}>`);
    if (op.types.query) declare(op.types.query, `Query<${id}>`);
  }
  for (const [name, type] of Object.entries(VOCABULARIES)) declare(name, type);
  // Each event type's data (packages/shared/src/events/event-data.ts), for the typed event union below.
  for (const type of EVENT_TYPES) declare(eventDataName(type), `EventData<'${type}'>`);
  return named;
}

const probeSource = (named: Map<string, string>) =>
  [...PRELUDE, ...[...named].map(([name, type]) => `export type ${name} = ${type};`)].join('\n') + '\n';

/**
 * The type check of the generated types: each must equal its contract's, or \`npm run typecheck\`
 * fails on it (the cheap guard against a contract changed without regenerating).
 */
const checksSource = (named: Map<string, string>, extended: Set<string>) =>
  [
    '// Generated by packages/client/scripts/generate.ts: each type of src/generated.ts equals its',
    "// contract's, or the type check fails here. A contract changed: `npm run generate -w @mandate/client`.",
    ...PRELUDE,
    "import type * as Client from '../src/generated';",
    '// A generated type written as `Base & { … }` is compared member by member, as one object.',
    'type Flat<T> = { [K in keyof T]: T[K] };',
    'type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;',
    'type Expect<T extends true> = T;',
    'export type Checks = [',
    ...[...named].map(
      ([name, type]) =>
        `  Expect<Equal<${extended.has(name) ? `Flat<Client.${name}>` : `Client.${name}`}, ${type}>>,`,
    ),
    '];',
    '',
  ].join('\n');

/** The operations and their named types, from the contracts (no compiler needed). */
export function plan() {
  const operations = CONTRACTS.map(describe);
  const seen = new Set<string>();
  for (const op of operations) {
    const key = `${op.namespace ?? ''}.${op.name}`;
    if (seen.has(key))
      throw new Error(`two operations are named ${key}: rename one or add it to NAMESPACE_OF_TAG`);
    seen.add(key);
  }
  const table = Object.fromEntries(
    operations.map((op) => [
      op.route.operationId,
      {
        method: op.route.method,
        path: op.route.path,
        params: op.params,
        body: op.body,
        query: op.query,
        list: op.list,
        ...(op.namespace ? { namespace: op.namespace } : {}),
        name: op.name,
      },
    ]),
  );
  return { operations, table, named: namedTypes(operations) };
}

/** Each alias of the probe as a plain type, expanded by the compiler. */
function expand(source: string, names: string[]): Map<string, string> {
  const probe = path.join(PACKAGE, 'scripts/.probe.ts');
  writeFileSync(probe, source);
  try {
    const config = ts.getParsedCommandLineOfConfigFile(
      path.join(ROOT, 'tsconfig.json'),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => {
          throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
        },
      },
    )!;
    // No ambient types (node, jest): the contracts need none, and the compiler reads less.
    const program = ts.createProgram([probe], { ...config.options, noEmit: true, types: [] });
    const file = program.getSourceFile(probe)!;
    const diagnostics = ts.getPreEmitDiagnostics(program, file);
    if (diagnostics.length) throw new Error(ts.formatDiagnostics(diagnostics, ts.createCompilerHost({})));
    const checker = program.getTypeChecker();
    const out = new Map<string, string>();
    for (const statement of file.statements) {
      if (!ts.isTypeAliasDeclaration(statement) || !names.includes(statement.name.text)) continue;
      const type = checker.getTypeAtLocation(statement.name);
      const text = checker.typeToString(
        type,
        undefined,
        ts.TypeFormatFlags.NoTruncation |
          ts.TypeFormatFlags.InTypeAlias |
          ts.TypeFormatFlags.UseStructuralFallback,
      );
      if (/\bz\.|\bZod|\$/.test(text)) throw new Error(`${statement.name.text} did not expand: ${text}`);
      out.set(statement.name.text, text);
    }
    return out;
  } finally {
    rmSync(probe, { force: true });
  }
}

/** Below this length an object type stays inline: a name would not read better than its members. */
const MIN_NAMED_OBJECT = 120;

/**
 * Each expanded type with the object types and vocabularies it contains that are themselves named
 * (an event in the evidence bundle, a tenant in an approved onboarding, a mandate's state) written
 * as their names, so that every
 * shape is spelled once in src/generated.ts. Longest first, so a name stands for the most it can.
 */
function referToNamed(types: Map<string, string>): Map<string, string> {
  const named = [...types]
    .filter(
      ([name, text]) => (text.startsWith('{') && text.length >= MIN_NAMED_OBJECT) || name in VOCABULARIES,
    )
    .sort(([, a], [, b]) => b.length - a.length);
  const out = new Map<string, string>();
  for (const [name, text] of types) {
    let referred = text;
    for (const [other, shape] of named)
      if (other !== name && referred !== shape) referred = referred.split(shape).join(other);
    out.set(name, extending(referred, name, named));
  }
  return out;
}

/**
 * An object type whose members begin with all of a named object type's, written as that name and
 * the members it adds (`CreatedWebhookEndpoint` is `WebhookEndpoint & { secret: string; }`).
 */
function extending(text: string, name: string, named: [string, string][]): string {
  if (!text.startsWith('{ ')) return text;
  for (const [base, shape] of named) {
    const members = shape.slice(0, -1); // `{ a: A; b: B; ` — the base without its closing brace
    if (base !== name && shape.startsWith('{ ') && text.length > shape.length && text.startsWith(members))
      return `${base} & { ${text.slice(members.length)}`;
  }
  return text;
}

const literal = (value: unknown) => JSON.stringify(value).replace(/"/g, "'");

/**
 * The events as a union discriminated on `type`, each with its own data (docs/CLIENT.md,
 * "Webhooks"): what GET /v1/events/{id} answers and a webhook delivers, so an integrator's handler
 * narrows on `type`. AuditEvent (the contracts' answer) types every data alike.
 */
function eventTypes(): string[] {
  return [
    '/** Every event type (docs/API.md, "Events"). */',
    `export const EVENT_TYPES = ${literal(EVENT_TYPES)} as const;`,
    'export type EventType = (typeof EVENT_TYPES)[number];',
    "/** Each event type's `data`. */",
    'export interface EventDataByType {',
    ...EVENT_TYPES.map((type) => `${type}: ${eventDataName(type)};`),
    '}',
    '/** An event of one type, its `data` typed by it. */',
    "export type EventOf<T extends EventType> = Omit<AuditEvent, 'type' | 'data'> & { type: T; data: EventDataByType[T] };",
    '/** Any event: narrow it on `type` (`switch (event.type)`) to read its `data`. */',
    'export type MandateEvent = { [T in EventType]: EventOf<T> }[EventType];',
    '/** The body of a webhook delivery (docs/WEBHOOKS.md): the event, its type and its time; narrows on `type`. */',
    'export type WebhookPayload = { [T in EventType]: { type: T; timestamp: string; data: EventOf<T> } }[EventType];',
  ];
}
const doc = (text: string) => `/** ${text.replace(/\*\//g, '*\\/')} */`;

function signature(op: Operation): string {
  const args = op.params.map((p) => `${p}: string`);
  if (op.body === 'required') args.push(`body: ${op.types.body}`);
  if (op.body === 'optional') args.push(`body?: ${op.types.body}`);
  if (op.query) args.push(`query?: ${op.types.query}`);
  args.push('options?: RequestOptions');
  const answer = op.list ? `Paged<${op.types.item}>` : `Promise<${op.types.response}>`;
  return `${doc(`${op.route.summary} (\`${op.route.method} ${op.route.path}\`)`)}\n${op.name}(${args.join(', ')}): ${answer};`;
}

/** The API's vocabulary as runtime values: states, scopes, roles, plans and permissions. */
function vocabulary(): string[] {
  return [
    "/** The API's vocabulary as runtime values, for pickers and filters (each the union its types use). */",
    `export const MANDATE_STATES = ${literal(MANDATE_STATES)} as const;`,
    `export const API_KEY_SCOPES = ${literal(API_KEY_SCOPES)} as const;`,
    `export const ROLES = ${literal(ROLES)} as const;`,
    `export const PLANS = ${literal(PLANS)} as const;`,
    '',
    '/** The permissions each role grants (docs/API.md, "Scopes, permissions and roles"). */',
    `export const ROLE_PERMISSIONS = ${JSON.stringify(ROLE_PERMISSIONS)} as const;`,
    '/** Each permission in words, for a person choosing a role. */',
    `export const PERMISSION_DESCRIPTIONS = ${JSON.stringify(PERMISSION_DESCRIPTIONS)} as const;`,
  ];
}

/** src/generated.ts and the type checks of test/contract-types.check.ts, formatted. */
export async function generate(): Promise<{ generated: string; checks: string }> {
  const { operations, table, named } = plan();
  const names = [...named.keys()];
  const types = referToNamed(expand(probeSource(named), names));
  const namespaces = [...new Set(operations.flatMap((op) => (op.namespace ? [op.namespace] : [])))];

  const out: string[] = [
    '// Generated by packages/client/scripts/generate.ts from the public route contracts: do not edit.',
    '// A route added to a contract: run `npm run generate -w @mandate/client`.',
    "import type { Page, Paged, RequestOptions } from './core';",
    '',
    ...names.map((name) => {
      const text = types.get(name)!;
      const item = operations.find((op) => op.types.item === name);
      return item
        ? `export type ${name} = ${text};\nexport type ${item.types.response} = Page<${name}>;`
        : `export type ${name} = ${text};`;
    }),
    '',
    '/** How each operation travels: method, path, its parameters, body and answer. */',
    'export const OPERATIONS = {',
    ...Object.entries(table).map(([operationId, spec]) => `${operationId}: ${literal(spec)},`),
    '} as const;',
    'export type OperationId = keyof typeof OPERATIONS;',
    '',
    ...vocabulary(),
    '',
    ...namespaces.map((ns) =>
      [
        `/** The ${ns} operations. */`,
        `export interface ${pascal(ns)}Operations {`,
        ...operations.filter((op) => op.namespace === ns).map(signature),
        '}',
      ].join('\n'),
    ),
    '',
    ...eventTypes(),
    '',
    '/** Every operation of the public API, as a method. */',
    'export interface Operations {',
    ...namespaces.map((ns) => `readonly ${ns}: ${pascal(ns)}Operations;`),
    ...operations.filter((op) => !op.namespace).map(signature),
    '}',
    '',
  ];
  // Loaded here: prettier's own dynamic imports need a module system jest's (which loads plan()) is not.
  const prettier = await import('prettier');
  const format = async (text: string, file: string) =>
    prettier.format(text, { ...(await prettier.resolveConfig(file)), filepath: file });
  return {
    generated: await format(out.join('\n'), TARGET),
    checks: await format(
      checksSource(named, new Set(names.filter((n) => / & \{/.test(types.get(n)!)))),
      CHECKS,
    ),
  };
}

async function main() {
  const { generated, checks } = await generate();
  const files: [string, string][] = [
    [TARGET, generated],
    [CHECKS, checks],
  ];
  if (process.argv.includes('--check')) {
    const stale = files.filter(([file, text]) => readFileSync(file, 'utf8') !== text);
    for (const [file] of stale)
      console.error(
        `${path.relative(ROOT, file)} is out of date: run \`npm run generate -w @mandate/client\``,
      );
    if (stale.length) process.exit(1);
    return;
  }
  for (const [file, text] of files) {
    writeFileSync(file, text);
    console.log(`wrote ${path.relative(ROOT, file)}`);
  }
}

if (require.main === module) void main();
