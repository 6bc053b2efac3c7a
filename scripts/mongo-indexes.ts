/**
 * `npm run docs:indexes` — writes docs/OPERATIONS.md's list of each service's MongoDB database,
 * collections and indexes from the Mongo adapters' own schemas (the ones
 * test/mongo/index-coverage.test.ts checks the queries against), so the list an operator creates
 * users and plans storage from is the one the services build at start. test/docs/mongo-indexes.test.ts
 * fails when the list is out of date. It sits between the two markers below; the rest of the
 * document is written by hand.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Schema } from 'mongoose';
import type { MongoQueryShape } from '@mandate/shared/data';
import {
  EVENT_QUERY_SHAPES,
  LOG_QUERY_SHAPES,
  WEBHOOK_QUERY_SHAPES,
  checkpointSchema,
  eventSchema,
  logHeadSchema,
  logNodeSchema,
  webhookDeliverySchema,
  webhookEndpointSchema,
} from '@mandate/audit/testing';
import { service as audit } from '@mandate/audit/service';
import { IDENTITY_GUARD_SCHEMAS, IDENTITY_QUERY_SHAPES, IDENTITY_SCHEMAS } from '@mandate/identity/testing';
import { service as identity } from '@mandate/identity/service';
import {
  AUTHORIZATION_QUERY_SHAPES,
  MANDATE_QUERY_SHAPES,
  authorizationSchema,
  budgetPeriodSchema,
  mandateSchema,
  statusListSchema,
} from '@mandate/mandates/testing';
import { service as mandates } from '@mandate/mandates/service';

export const LIST_START = '<!-- MongoDB indexes: generated from the schemas by `npm run docs:indexes` -->';
export const LIST_END = '<!-- end of MongoDB indexes -->';

const ROOT = path.resolve(__dirname, '..');
export const OPERATIONS_MD = path.join(ROOT, 'docs', 'OPERATIONS.md');

/** One service that keeps data in MongoDB: its schemas and every query its adapters declare. */
export interface MongoService {
  service: 'mandates' | 'identity' | 'audit';
  /** The default of its `MONGO_DB`, read from its config schema. */
  database: string;
  schemas: Schema[];
  shapes: MongoQueryShape[];
}

/** `MONGO_DB`'s default, as the service's config gives it when the variable is unset. */
function defaultDatabase(main: { configSchema: unknown }): string {
  const field = (main.configSchema as { shape?: { MONGO_DB?: { parse(v: unknown): unknown } } }).shape
    ?.MONGO_DB;
  if (!field) throw new Error('the service has no MONGO_DB setting');
  return String(field.parse(undefined));
}

export const MONGO_SERVICES: readonly MongoService[] = [
  {
    service: 'mandates',
    database: defaultDatabase(mandates),
    schemas: [mandateSchema, statusListSchema, authorizationSchema, budgetPeriodSchema],
    shapes: [...MANDATE_QUERY_SHAPES, ...AUTHORIZATION_QUERY_SHAPES],
  },
  {
    service: 'identity',
    database: defaultDatabase(identity),
    schemas: [...Object.values(IDENTITY_SCHEMAS), ...Object.values(IDENTITY_GUARD_SCHEMAS)],
    shapes: IDENTITY_QUERY_SHAPES,
  },
  {
    service: 'audit',
    database: defaultDatabase(audit),
    schemas: [
      eventSchema,
      logNodeSchema,
      logHeadSchema,
      checkpointSchema,
      webhookEndpointSchema,
      webhookDeliverySchema,
    ],
    shapes: [...EVENT_QUERY_SHAPES, ...LOG_QUERY_SHAPES, ...WEBHOOK_QUERY_SHAPES],
  },
];

/** The collection a schema is stored in: its `collection` option, which every adapter sets. */
export function collectionOf(schema: Schema): string {
  const name = schema.get('collection') as string | undefined;
  if (!name) throw new Error('a Mongo schema without a collection option: name its collection');
  return name;
}

/** The keys as mongosh's `createIndex` takes them. */
const keysOf = (fields: Record<string, unknown>) =>
  `\`{ ${Object.entries(fields)
    .map(([f, d]) => `${f.includes('.') ? `'${f}'` : f}: ${String(d)}`)
    .join(', ')} }\``;

/** The options an operator sees in `getIndexes()`; mongoose's `background` (ignored by MongoDB 4.2+) left out. */
function optionsOf(options: Record<string, unknown>): string {
  const out: string[] = [];
  if (options.unique) out.push('unique');
  if (options.sparse) out.push('sparse');
  if (options.partialFilterExpression)
    out.push(`partial: \`${JSON.stringify(options.partialFilterExpression)}\``);
  if (typeof options.expireAfterSeconds === 'number')
    out.push(
      options.expireAfterSeconds === 0
        ? 'TTL: removed at the date the field holds'
        : `TTL: ${options.expireAfterSeconds} s after the field's date`,
    );
  if (typeof options.name === 'string') out.push(`name \`${options.name}\``);
  const known = new Set([
    'unique',
    'sparse',
    'partialFilterExpression',
    'expireAfterSeconds',
    'name',
    'background',
  ]);
  const unknown = Object.keys(options).filter((k) => !known.has(k));
  if (unknown.length > 0)
    throw new Error(`index option(s) ${unknown.join(', ')}: teach optionsOf to show them`);
  return out.length > 0 ? out.join(', ') : '—';
}

/** The generated list, markers included. */
export function indexList(services: readonly MongoService[] = MONGO_SERVICES): string {
  const lines = [LIST_START];
  for (const { service, database, schemas } of services) {
    const rows = schemas.flatMap((schema) => {
      const collection = collectionOf(schema);
      return [
        `| \`${collection}\` | \`{ _id: 1 }\` | unique (every collection has it) |`,
        ...schema
          .indexes()
          .map(
            ([fields, options]) =>
              `| \`${collection}\` | ${keysOf(fields)} | ${optionsOf(options as Record<string, unknown>)} |`,
          ),
      ];
    });
    lines.push(
      '',
      `**${service}**: database \`${database}\` (\`MONGO_DB\`), ${schemas.length} collections, ${rows.length} indexes.`,
      '',
      '| Collection | Keys | Options |',
      '| --- | --- | --- |',
      ...rows,
    );
  }
  lines.push('', LIST_END);
  return lines.join('\n');
}

/** The document with its list replaced by `list`; throws when the markers are missing. */
export function withList(doc: string, list: string, file: string): string {
  const start = doc.indexOf(LIST_START);
  const end = doc.indexOf(LIST_END);
  if (start < 0 || end < start) throw new Error(`${file}: no MongoDB index list markers`);
  return doc.slice(0, start) + list + doc.slice(end + LIST_END.length);
}

if (require.main === module) {
  const before = readFileSync(OPERATIONS_MD, 'utf8');
  const after = withList(before, indexList(), OPERATIONS_MD);
  if (after !== before) writeFileSync(OPERATIONS_MD, after);
  console.log(`${path.relative(ROOT, OPERATIONS_MD)}: ${after === before ? 'up to date' : 'written'}`);
}
