import { builtinModules } from 'node:module';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import rootPackage from '../../package.json';
import { buildServices, SERVICES, type BuildResult } from '../../scripts/build';
import { serviceArgs, type ServiceName } from '../../scripts/services';
import { apiClient, createPaymentsMandate, createTenant, startStack, type Stack } from '../support/stack';

/**
 * Production runs compiled JavaScript (issue 17 item 1): `npm run build` bundles each service, the
 * bundles serve the API as five processes, and the images run them with no transpiler. There is
 * no Docker engine in CI, so the Dockerfile itself is checked.
 */
const ROOT = path.resolve(__dirname, '../..');

describe('npm run build (scripts/build.ts)', () => {
  // The image's layout (/app/node_modules next to /app/dist), the dependencies linked from this clone.
  const appDir = mkdtempSync(path.join(tmpdir(), 'mandate-app-'));
  const outDir = path.join(appDir, 'dist');
  let built: BuildResult;
  let stack: Stack | undefined;

  beforeAll(async () => {
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(appDir, 'node_modules'), 'dir');
    built = await buildServices(outDir);
  }, 30_000);

  afterAll(async () => {
    await stack?.stop();
    rmSync(appDir, { recursive: true, force: true });
  }, 30_000);

  it('when built, then each bundle requires only node built-ins and the production dependencies of package.json', () => {
    const allowed = (specifier: string) => {
      const bare = specifier.replace(/^node:/, '');
      if (builtinModules.includes(bare)) return true;
      return Object.keys(rootPackage.dependencies).some(
        (dep) => specifier === dep || specifier.startsWith(`${dep}/`),
      );
    };
    for (const name of SERVICES) {
      expect({ name, outside: built.requires[name].filter((r) => !allowed(r)) }).toEqual({
        name,
        outside: [],
      });
      expect(built.requires[name]).not.toContain('tsx');
    }
    expect(Object.keys(rootPackage.dependencies)).not.toContain('tsx');
  });

  it('when the five compiled services run as processes, then a tenant creates a mandate through the gateway and verify allows it', async () => {
    stack = await startStack({}, { runtime: { kind: 'dist', distDir: outDir } });
    for (const service of [stack.gateway, ...Object.values(stack.services)]) {
      expect(service.child.spawnargs.slice(1)).toEqual(
        serviceArgs(service.name as ServiceName, { kind: 'dist', distDir: outDir }),
      );
      expect(service.child.spawnargs.slice(-2)).toEqual([
        '--enable-source-maps',
        path.join(outDir, service.name, 'main.js'),
      ]);
    }
    const tenant = await createTenant(stack, { name: 'Compiled' });
    const api = apiClient(stack.gateway.url);
    const created = await createPaymentsMandate(api, tenant.auth);
    expect(created.status).toBe(201);
    const verified = await api('POST', '/v1/verify', {
      auth: tenant.auth,
      body: { mandate_id: created.body.id, action: 'payments:create' },
    });
    expect(verified.body).toMatchObject({ decision: 'ALLOW', reason: 'OK', mandate_version: 1 });
  }, 60_000);
});

interface Stage {
  name: string;
  from: string;
  lines: string[];
}

/** The Dockerfile's stages, in order: `FROM <image> AS <name>` and the instructions under it. */
function dockerStages(text: string): Stage[] {
  const stages: Stage[] = [];
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (line === '' || line.startsWith('#')) continue;
    const from = /^FROM\s+(\S+)\s+AS\s+(\S+)$/i.exec(line);
    if (from) stages.push({ from: from[1]!, name: from[2]!, lines: [] });
    else stages.at(-1)?.lines.push(line);
  }
  return stages;
}

describe('Dockerfile', () => {
  const stages = dockerStages(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'));
  const byName = new Map(stages.map((s) => [s.name, s]));
  /** The stages a service image is made of: its own, and every stage it is built FROM. */
  const imageStages = (name: string): Stage[] => {
    const stage = byName.get(name)!;
    return byName.has(stage.from) ? [...imageStages(stage.from), stage] : [stage];
  };

  it('when read, then every stage starts from a supported Node LTS within package.json engines', () => {
    const [, below] = /<(\d+)/.exec(rootPackage.engines.node) ?? [];
    for (const stage of stages.filter((s) => !byName.has(s.from))) {
      const major = Number(/^node:(\d+)-/.exec(stage.from)?.[1]);
      expect({ stage: stage.name, major, lts: [22, 24].includes(major) }).toEqual({
        stage: stage.name,
        major,
        lts: true,
      });
      expect(major).toBeLessThan(Number(below));
    }
  });

  it.each(SERVICES)(
    'when the %s image is read, then it runs node dist/<service>/main.js with production dependencies only and no tsx',
    (name) => {
      const image = imageStages(name);
      const instructions = image.flatMap((s) => s.lines);
      expect(instructions.filter((l) => /tsx|\.ts\b|src\//.test(l))).toEqual([]);
      // The arguments the launcher gives the compiled service (its V8 flags included), so an image
      // runs as `SERVICES_RUNTIME=dist npm run start:services` does.
      const args = ['node', ...serviceArgs(name, { kind: 'dist', distDir: 'dist' })];
      expect(instructions.at(-1)).toBe(`CMD [${args.map((a) => JSON.stringify(a)).join(', ')}]`);
      expect(args.slice(-2)).toEqual(['--enable-source-maps', `dist/${name}/main.js`]);
      // What the runtime stages copy in: the production dependencies and the bundles, nothing else.
      const copied = instructions.filter((l) => l.startsWith('COPY'));
      expect(copied).toEqual([
        'COPY --from=deps /app/node_modules ./node_modules',
        'COPY --from=build /app/dist ./dist',
      ]);
      expect(byName.get('deps')!.lines.some((l) => /npm ci --omit=dev\b/.test(l))).toBe(true);
      expect(byName.get('build')!.lines).toContain('RUN npm run build');
    },
  );
});
