import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildPublicOpenApi } from '@mandate/gateway';

const ROOT = path.resolve(__dirname, '../..');
const GENERATOR = path.join(ROOT, 'node_modules/openapi-typescript/bin/cli.js');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

/** What an integrator writes against the generated types: it must compile, and the wrong lines must not. */
const PROGRAM = `
import type { components, operations, paths } from './schema';

type Schemas = components['schemas'];
type CreateMandate = paths['/v1/mandates']['post'];
type CreateBody = NonNullable<CreateMandate['requestBody']>['content']['application/json'];
type Created = CreateMandate['responses'][201]['content']['application/json'];
type MandatePage = paths['/v1/mandates']['get']['responses'][200]['content']['application/json'];
type Decision = operations['verify']['responses'][200]['content']['application/json'];
type ErrorBody = CreateMandate['responses'][400]['content']['application/json'];

export const body: CreateBody = {
  principal: 'customer-42',
  delegate: { id: 'agent-7', type: 'agent' },
  scope: { actions: ['payments:create'], constraints: { max_amount: 5000, currency: 'EUR' } },
};
// @ts-expect-error the principal is required
export const missing: CreateBody = { delegate: 'agent-7' };

export async function create(baseUrl: string, apiKey: string, request: CreateBody): Promise<Created> {
  const res = await fetch(baseUrl + '/v1/mandates', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + apiKey, 'content-type': 'application/json' },
    body: JSON.stringify(request),
  });
  if (!res.ok) throw new Error(((await res.json()) as ErrorBody).message);
  return (await res.json()) as Created;
}

export const describeMandate = (m: Schemas['Mandate']): string => m.id + ' ' + m.state + ' v' + m.version;
export const ids = (page: MandatePage): string[] => page.data.map((m) => m.id);
export const allowed = (d: Decision): boolean => d.decision === 'ALLOW' && d.reason === 'OK';
// @ts-expect-error not a decision
export const wrong: Decision['decision'] = 'MAYBE';
export const envelope: ErrorBody = { error: 'BAD_REQUEST', message: 'principal is required' };
export const keyName = (k: Schemas['ApiKey']): string => k.name + ' ' + k.status;
export const plan = (u: Schemas['Usage']): 'beta' | 'enterprise' => u.plan;
export const eventType = (e: Schemas['AuditEvent']): string => e.type;
`;

/** The one wrong line, without the marker: the type check must refuse it, and only it. */
const WRONG = `
import type { components } from './schema';
export const paused: components['schemas']['Mandate']['state'] = 'PAUSED';
`;

describe('a client generated from the OpenAPI document by an independent generator (openapi-typescript)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'openapi-generated-'));
    writeFileSync(path.join(dir, 'openapi.json'), JSON.stringify(buildPublicOpenApi()));
    execFileSync(process.execPath, [GENERATOR, 'openapi.json', '--output', 'schema.d.ts'], {
      cwd: dir,
      timeout: 60_000,
      stdio: 'pipe',
    });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('when the document is generated from, then every named schema of the document is a type', () => {
    const document = buildPublicOpenApi() as unknown as { components: { schemas: Record<string, unknown> } };
    const types = readFileSync(path.join(dir, 'schema.d.ts'), 'utf8');
    for (const name of Object.keys(document.components.schemas))
      expect({ name, declared: new RegExp(`^\\s+"?${name}"?: `, 'm').test(types) }).toEqual({
        name,
        declared: true,
      });
  });

  it('when a small program is type-checked against the generated types, then it compiles and only the wrong line is caught', () => {
    writeFileSync(path.join(dir, 'program.ts'), PROGRAM);
    writeFileSync(path.join(dir, 'wrong.ts'), WRONG);
    const tsc = spawnSync(
      process.execPath,
      [TSC, '--noEmit', '--strict', '--target', 'es2022', '--lib', 'es2022,dom', 'program.ts', 'wrong.ts'],
      { cwd: dir, timeout: 120_000, encoding: 'utf8' },
    );
    const errors = (tsc.stdout + tsc.stderr).split('\n').filter((line) => /error TS/.test(line));
    expect(errors).toEqual([expect.stringMatching(/^wrong\.ts\(3,.*"PAUSED"/)]);
  }, 120_000);
});
