/**
 * `npm run docs:routes` — writes each service README's route table from the route contracts, so
 * a README cannot list fewer routes than the service serves (test/docs/route-tables.test.ts fails
 * when a table is out of date). The table sits between the two markers below; everything else in
 * a README is written by hand.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { InternalRouteContract, RouteContract, ServiceName } from '@mandate/shared/contract';
import { contract as auditContract } from '@mandate/audit';
import { contract as identityContract, internalRoutes as identityInternal } from '@mandate/identity';
import { contract as mandatesContract, internalRoutes as mandatesInternal } from '@mandate/mandates';
import { contract as verifyContract } from '@mandate/verify';
import { gatewayContract } from '@mandate/gateway';

export const TABLE_START = '<!-- route table: generated from the contracts by `npm run docs:routes` -->';
export const TABLE_END = '<!-- end of route table -->';

const ROOT = path.resolve(__dirname, '..');
const PUBLIC: readonly RouteContract[] = [
  ...gatewayContract,
  ...mandatesContract,
  ...verifyContract,
  ...auditContract,
  ...identityContract,
];
const INTERNAL: readonly InternalRouteContract[] = [
  ...Object.values(identityInternal),
  ...Object.values(mandatesInternal),
];

export const SERVICES: readonly ServiceName[] = ['gateway', 'mandates', 'verify', 'audit', 'identity'];

/** `:name` segments as the docs write them. */
const shownPath = (p: string) => p.replace(/:([A-Za-z_]+)/g, '{$1}');
/** A table cell: no pipe or line break may end it early. */
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

function who(route: RouteContract): string {
  if (route.auth === 'public') return 'public';
  if (route.auth === 'operator') return 'operator token';
  const scopes = route.scopes ?? (route.scope ? [route.scope] : []);
  return scopes.length === 0 ? 'any tenant credential' : scopes.map((s) => `\`${s}\``).join(' or ');
}

/** The table of one service's routes: public ones (as the gateway serves them), then internal ones. */
export function routeTable(service: ServiceName): string {
  const rows = PUBLIC.filter((r) => r.service === service).map(
    (r) => `| \`${r.method}\` | \`${shownPath(r.path)}\` | ${who(r)} | ${cell(r.summary)} |`,
  );
  const internal = INTERNAL.filter((r) => r.service === service).map(
    (r) => `| \`${r.method}\` | \`${shownPath(r.path)}\` | internal token | ${cell(r.summary)} |`,
  );
  return [
    TABLE_START,
    `${rows.length + internal.length} routes: ${rows.length} public (through the gateway), ${internal.length} internal.`,
    '',
    '| Method | Path | Who may call | What it does |',
    '|---|---|---|---|',
    ...rows,
    ...internal,
    TABLE_END,
  ].join('\n');
}

export const readmeOf = (service: ServiceName) => path.join(ROOT, 'services', service, 'README.md');

/** The README with its table replaced by `table`; throws when the markers are missing. */
export function withTable(readme: string, table: string, file: string): string {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`${file}: no route table markers`);
  return readme.slice(0, start) + table + readme.slice(end + TABLE_END.length);
}

if (require.main === module) {
  for (const service of SERVICES) {
    const file = readmeOf(service);
    const before = readFileSync(file, 'utf8');
    const after = withTable(before, routeTable(service), file);
    if (after !== before) writeFileSync(file, after);
    console.log(`${path.relative(ROOT, file)}: ${after === before ? 'up to date' : 'written'}`);
  }
}
