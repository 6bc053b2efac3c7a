import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { contractViolations, startRecordingProxy } from '../support/contract-recorder';
import { startJwksServer, type JwksServer } from '../support/jwks-server';
import { startScript, type ScriptProcess } from '../support/script-process';
import { freePort } from '../support/stack';

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);
const PRETTIER = path.join(ROOT, 'node_modules', 'prettier', 'bin', 'prettier.cjs');

/** The README sections whose shell blocks a newcomer pastes, in README order. */
const SECTIONS = [
  'API walk-through',
  'Keys, roles and JWT callers',
  'Onboarding and widget',
  'Identity verification with a wallet',
  'Evidence export',
  'Checking a bundle offline',
];

interface Block {
  section: string;
  info: string;
  code: string;
}

/** Every fenced block of the named sections (a section runs from its heading to the next heading). */
export function readmeBlocks(readme: string, sections: string[] = SECTIONS): Block[] {
  const blocks: Block[] = [];
  let section: string | undefined;
  let fence: { info: string; lines: string[] } | undefined;
  for (const line of readme.split('\n')) {
    if (fence) {
      if (line.startsWith('```')) {
        if (section && sections.includes(section))
          blocks.push({ section, info: fence.info, code: fence.lines.join('\n') });
        fence = undefined;
      } else fence.lines.push(line);
      continue;
    }
    const heading = /^#{2,4} (.+)$/.exec(line);
    if (heading) section = heading[1]!.trim();
    else if (line.startsWith('```')) fence = { info: line.slice(3).trim(), lines: [] };
  }
  return blocks;
}

/** The expected statuses, in order: every `curl` line ends with `# → NNN`. */
const expectedStatuses = (script: string) => [...script.matchAll(/# → (\d{3})/g)].map((m) => Number(m[1]));

/** `npm start`, as its script runs it (tsx scripts/embedded.ts), on a free port, trusting `jwks` as the "dashboard" issuer. */
async function startNpmStart(jwks: JwksServer): Promise<ScriptProcess & { url: string }> {
  const port = await freePort();
  const issuers = [
    {
      name: 'dashboard',
      issuer: jwks.issuer,
      jwks_uri: jwks.jwksUri,
      audience: 'mandate-api',
      subject_scheme: 'dashboard',
    },
  ];
  const started = await startScript(
    'scripts/embedded.ts',
    { PORT: String(port), LOG_LEVEL: 'warn', JWT_ISSUERS: JSON.stringify(issuers) },
    (lines) => /export OPERATOR_TOKEN=\S+\n[\s\S]*={20,}/.test(lines.join('\n')),
    'npm start',
  );
  return { ...started, url: `http://127.0.0.1:${port}` };
}

describe('the README, as a newcomer follows it', () => {
  let readme: string;
  let server: Awaited<ReturnType<typeof startNpmStart>>;
  let scratch: string;
  let jwks: JwksServer;

  beforeAll(async () => {
    readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
    scratch = await mkdtemp(path.join(tmpdir(), 'readme-walkthrough-'));
    jwks = await startJwksServer();
    await jwks.addKey();
    server = await startNpmStart(jwks);
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
    await jwks?.close();
  }, 30_000);

  it('when npm start has started, then its banner says where to go next: the walk-through, the API reference and the OpenAPI document', () => {
    const banner = server.lines.join('\n');
    expect(banner).toContain('Next: README.md, section "API walk-through"');
    expect(banner).toContain(`the API reference is docs/API.md and ${server.url}/v1/openapi.json`);
    expect(banner).toContain(`Dashboard:      ${server.url}/dashboard/   (README, section "Dashboard")`);
    expect(readme).toMatch(/^## Dashboard$/m);
    // The wallet flow's TEST PID issuer is named, so nobody mistakes it for a real one.
    expect(banner).toContain('Wallet (PID):   TEST PID issuer https://test-pid-issuer.invalid trusted');
    expect(readme).toMatch(/^## Identity verification with a wallet$/m);
    // The section the banner names exists.
    expect(readme).toMatch(/^## API walk-through$/m);
  });

  it('when the shell blocks of the walk-through sections run in a scratch directory, then every curl answers the status its comment states, the evidence checks out without any registry, and the clone is left untouched', async () => {
    const blocks = readmeBlocks(readme);
    for (const section of SECTIONS) expect(blocks.some((b) => b.section === section)).toBe(true);
    const runnable = blocks.filter((b) => b.info === 'sh');
    // JWT_ISSUERS configures the reader's own identity provider (here: the JWKS server above): the only block not run.
    expect(blocks.filter((b) => b.info === 'sh norun').map((b) => b.section)).toEqual([
      'Keys, roles and JWT callers',
    ]);
    // The reader sets API and OPERATOR_TOKEN from the banner, and JWT from an identity provider;
    // here they come from the server and the issuer started above.
    const lines = runnable.flatMap((b) => b.code.split('\n'));
    const settings = lines.filter((l) => /^export (API|OPERATOR_TOKEN|JWT)=/.test(l));
    expect(settings).toHaveLength(3);
    const script = lines.filter((l) => !settings.includes(l)).join('\n');
    const expected = expectedStatuses(script);
    expect(expected.length).toBeGreaterThan(30);

    const statusFile = path.join(scratch, 'statuses');
    await writeFile(statusFile, '');
    // curl records each answer's status, so every call is checked against its `# → NNN`.
    const prelude = [
      'set -euo pipefail',
      'curl() {',
      '  local body status',
      '  body=$(mktemp)',
      `  status=$(command curl -sS -o "$body" -w '%{http_code}' "$@") || status=000`,
      '  cat "$body"; rm -f "$body"',
      '  echo "$status" >> "$WALK_STATUSES"',
      '}',
    ].join('\n');
    // Not --ignored: other test files running meanwhile may write ignored files (.data/, caches).
    const before = (await run('git', ['status', '--porcelain'], { cwd: ROOT })).stdout;
    const jwt = await jwks.sign({ sub: 'bob', aud: 'mandate-api' }, { expiresIn: '10m' });
    // Every answer the reader gets passes through it, and is checked against its route's contract below.
    const proxy = await startRecordingProxy(server.url);
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const bash = spawn('bash', ['-c', `${prelude}\n${script}`], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: scratch,
          TMPDIR: scratch,
          API: proxy.url,
          OPERATOR_TOKEN: /export OPERATOR_TOKEN=(\S+)/.exec(server.lines.join('\n'))![1]!,
          WALK_STATUSES: statusFile,
          JWT: jwt,
          // Nothing in the walk-through may reach a package registry.
          npm_config_registry: 'http://127.0.0.1:9/',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      bash.stdout.on('data', (d: Buffer) => (out += d.toString()));
      bash.stderr.on('data', (d: Buffer) => (out += d.toString()));
      bash.once('exit', (code) => resolve({ code, out }));
    });
    await proxy.close();
    const statuses = (await readFile(statusFile, 'utf8')).split('\n').filter(Boolean).map(Number);

    expect({ statuses, exit: result.code }).toEqual({ statuses: expected, exit: 0 });
    // Each status is declared for its route and each body matches the route's contract.
    expect(proxy.records.length).toBeGreaterThanOrEqual(expected.length);
    expect(contractViolations(proxy.records)).toEqual([]);
    expect(result.out).toMatch(/^OK evidence bundle for mandate mdt_\S+ verified against the pinned keys$/m);
    // Every file the walk-through wrote is in its scratch directory, none in the clone.
    expect((await run('git', ['status', '--porcelain'], { cwd: ROOT })).stdout).toBe(before);
    const written = [...script.matchAll(/(?:tee|>) ([\w.-]+\.json)/g)].map((m) => m[1]!);
    expect(written.filter((name) => existsSync(path.join(ROOT, name)))).toEqual([]);
    // They are in the directory the walk-through's `cd "$(mktemp -d)"` made, under TMPDIR.
    // (tsx keeps a cache of its own there too: tsx-0/.)
    const dirs = readdirSync(scratch, { withFileTypes: true }).filter(
      (d) => d.isDirectory() && d.name.startsWith('tmp.'),
    );
    expect(dirs).toHaveLength(1);
    const workDir = path.join(scratch, dirs[0]!.name);
    expect(written.filter((name) => !existsSync(path.join(workDir, name)))).toEqual([]);
  }, 120_000);

  it('when a file the walk-through writes lands in the clone by mistake, then git does not offer it for a commit and the prettier check of npm test skips it', async () => {
    const script = readmeBlocks(readme)
      .map((b) => b.code)
      .join('\n');
    const written = [...new Set([...script.matchAll(/(?:tee|>) ([\w.-]+\.json)/g)].map((m) => m[1]!))];
    expect(written).toEqual(
      expect.arrayContaining(['tenant.json', 'mandate.json', 'key.json', 'bundle.json', 'jwks.json']),
    );
    // The prettier CLI answers from the repo's .prettierignore, as `npm test`'s `prettier --check .` reads it.
    const prettierIgnores = async (name: string) =>
      JSON.parse((await run(process.execPath, [PRETTIER, '--file-info', name], { cwd: ROOT })).stdout)
        .ignored as boolean;
    // One prettier process per file (a second or more each on a loaded machine): all at once.
    const answers = await Promise.all(
      written.map(async (name) => ({
        name,
        git: await run('git', ['check-ignore', '--no-index', name], { cwd: ROOT }).then(
          () => true,
          () => false,
        ),
        prettier: await prettierIgnores(name),
      })),
    );
    expect(answers).toEqual(written.map((name) => ({ name, git: true, prettier: true })));
    // The project's own JSON stays tracked and checked.
    await expect(run('git', ['check-ignore', '--no-index', 'package.json'], { cwd: ROOT })).rejects.toThrow();
    expect(await prettierIgnores('package.json')).toBe(false);
  }, 90_000);
});
