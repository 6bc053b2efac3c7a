import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { newId } from '@mandate/shared/core';
import { contractViolations, startRecordingProxy } from '../support/contract-recorder';
import { startScript, type ScriptProcess } from '../support/script-process';
import { deleteRedisKeys, deleteTopology, freePort } from '../support/stack';

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);
const PRETTIER = path.join(ROOT, 'node_modules', 'prettier', 'bin', 'prettier.cjs');

/** How the service runs: `npm start` (embedded) or `npm run start:services` (five processes). */
type Mode = 'embedded' | 'services';

interface Block {
  info: string;
  code: string;
}

/** Every fenced block of a markdown text, with its info string (indented fences are list items' examples, not blocks of the page). */
export function fencedBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  let fence: { info: string; lines: string[] } | undefined;
  for (const line of text.split('\n')) {
    if (fence) {
      if (line.startsWith('```')) {
        blocks.push({ info: fence.info, code: fence.lines.join('\n') });
        fence = undefined;
      } else fence.lines.push(line);
    } else if (line.startsWith('```')) fence = { info: line.slice(3).trim(), lines: [] };
  }
  return blocks;
}

/**
 * Whether a shell block runs against `mode`: `sh` against both, `sh embedded-only` against
 * `npm start` only, `sh norun` never (it starts or deploys something, or needs the reader's own
 * infrastructure). Any other `sh …` marker is a mistake the test reports.
 */
function runsIn(info: string, mode: Mode): boolean {
  if (info === 'sh') return true;
  if (info === 'sh embedded-only') return mode === 'embedded';
  if (info === 'sh norun' || !/^(sh|bash|shell)\b/.test(info)) return false;
  throw new Error(`unknown shell block marker: \`\`\`${info}`);
}

/** README.md, then every guide under docs/ with shell blocks: what a reader can paste. */
const DOCUMENTS = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`)
    .filter((doc) =>
      fencedBlocks(readFileSync(path.join(ROOT, doc), 'utf8')).some((b) => runsIn(b.info, 'embedded')),
    ),
];

/** The lines a reader fills in from the banner; the test fills them in from the running service. */
const READER_SETTING = /^export (API|OPERATOR_TOKEN)=/;

/** One document's script for `mode`: its runnable blocks in order, without the reader's settings. */
function scriptOf(doc: string, mode: Mode): string {
  const text = readFileSync(path.join(ROOT, doc), 'utf8');
  return fencedBlocks(text)
    .filter((b) => runsIn(b.info, mode))
    .flatMap((b) => b.code.split('\n'))
    .filter((l) => !READER_SETTING.test(l))
    .join('\n');
}

/** The expected statuses, in order: every `curl` command ends with `# → NNN`. */
const expectedStatuses = (script: string) => [...script.matchAll(/# → (\d{3})/g)].map((m) => Number(m[1]));

/**
 * The script's curl commands, each from its `curl` to the line holding its `# → NNN` (continuation
 * lines and a multi-line body included); comment lines left out.
 */
function curlCommands(script: string): string[] {
  const found: string[] = [];
  let current: string[] | undefined;
  for (const line of script.split('\n')) {
    if (/^\s*#/.test(line)) continue;
    if (!current && /(^|[\s;&|(])curl\s/.test(line)) current = [];
    if (!current) continue;
    current.push(line);
    const text = current.join('\n').replace(/\\"/g, '');
    const open = (text.split("'").length - 1) % 2 === 1 || (text.split('"').length - 1) % 2 === 1;
    if (/# → \d{3}/.test(line) || (!open && !line.trimEnd().endsWith('\\'))) {
      found.push(current.join('\n'));
      current = undefined;
    }
  }
  if (current) found.push(current.join('\n'));
  return found;
}

/** Files a script writes into its working directory (`-o name`, `> name`). */
const writtenFiles = (script: string) => [
  ...new Set([...script.matchAll(/(?:-o|>) ([\w.-]+\.(?:json|txt))/g)].map((m) => m[1]!)),
];

interface Service {
  url: string;
  operatorToken: string;
  lines: string[];
  stop(): Promise<void>;
}

const tokenIn = (lines: string[]) =>
  lines.map((l) => /export OPERATOR_TOKEN=(\S+)/.exec(l)?.[1]).find(Boolean)!;

/** `npm start`, as its script runs it (tsx scripts/embedded.ts), on a free port. */
async function startNpmStart(): Promise<Service> {
  const port = await freePort();
  const started = await startScript(
    'scripts/embedded.ts',
    { PORT: String(port), LOG_LEVEL: 'warn' },
    (lines) => /export OPERATOR_TOKEN=\S+\n[\s\S]*={20,}/.test(lines.join('\n')),
    'npm start',
  );
  return {
    url: `http://127.0.0.1:${port}`,
    operatorToken: tokenIn(started.lines),
    lines: started.lines,
    stop: () => started.stop(),
  };
}

/** The Redis key prefix of a namespace: every key the services write starts with it. */
const redisPrefixes = (namespace: string) => ({ REDIS_PREFIX: `${namespace}:` });

/** `npm run start:services` (tsx scripts/services.ts), in an AMQP namespace and Redis prefix of its own. */
async function startServicesLauncher(namespace: string): Promise<Service> {
  const port = await freePort();
  const launcher: ScriptProcess = await startScript(
    'scripts/services.ts',
    {
      PORT: String(port),
      LOG_LEVEL: 'warn',
      AMQP_NAMESPACE: namespace,
      ...redisPrefixes(namespace),
    },
    (lines) => lines.some((l) => l.includes('Ctrl-C stops every service')),
    'npm run start:services',
  );
  const pids = launcher.lines
    .map((l) => /^\[launcher\] \S+ pid (\d+) /.exec(l)?.[1])
    .filter((p): p is string => p !== undefined)
    .map(Number);
  return {
    url: `http://127.0.0.1:${port}`,
    operatorToken: tokenIn(launcher.lines),
    lines: launcher.lines,
    async stop() {
      await launcher.stop();
      // Should the launcher have failed to stop one, it must not outlive the test.
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  };
}

/**
 * Runs one document's script with bash in `scratch` (HOME and TMPDIR), from the clone, against
 * `service` through a recording proxy; `curl` also dumps each answer's headers, so every status is
 * recorded without changing what the reader's command prints.
 */
async function runDocument(script: string, service: Service, scratch: string) {
  const statusFile = path.join(scratch, 'statuses');
  await writeFile(statusFile, '');
  const prelude = [
    'set -euo pipefail',
    'curl() {',
    '  local headers rc=0',
    '  headers=$(mktemp)',
    '  command curl -D "$headers" "$@" || rc=$?',
    `  awk '/^HTTP\\//{s=$2} END{print (s ? s : "000")}' "$headers" >> "$WALK_STATUSES"`,
    '  rm -f "$headers"',
    '  return $rc',
    '}',
  ].join('\n');
  const proxy = await startRecordingProxy(service.url);
  const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
    const bash = spawn('bash', ['-c', `${prelude}\n${script}`], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: scratch,
        TMPDIR: scratch,
        API: proxy.url,
        OPERATOR_TOKEN: service.operatorToken,
        WALK_STATUSES: statusFile,
        // Nothing in the docs may reach a package registry.
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
  return { ...result, statuses, records: proxy.records };
}

/** The dashboard's files and the development sign-in are no routes of the public API. */
const apiRecords = <T extends { path: string }>(records: T[]) =>
  records.filter((r) => !/^\/(dashboard|dashboard-dev)\//.test(r.path));

function describeMode(
  mode: Mode,
  start: (scratch: string) => Promise<Service>,
  cleanUp: () => Promise<void>,
) {
  describe(`the README and the guides against ${mode === 'embedded' ? 'npm start' : 'npm run start:services'}`, () => {
    let service: Service;
    let scratch: string;

    beforeAll(async () => {
      scratch = await mkdtemp(path.join(tmpdir(), `docs-walkthrough-${mode}-`));
      service = await start(scratch);
    }, 120_000);

    afterAll(async () => {
      await service?.stop();
      await cleanUp();
      if (scratch) await rm(scratch, { recursive: true, force: true });
    }, 60_000);

    it.each(DOCUMENTS.map((doc) => [doc]))(
      'when the shell blocks of %s run in a scratch directory, then every curl prints and answers the status its comment states, every answer keeps its route contract, and the clone is left untouched',
      async (doc) => {
        const script = scriptOf(doc, mode);
        const expected = expectedStatuses(script);
        // Every curl prints its status (-w …%{http_code}… or -i) and states the one to expect.
        const curls = curlCommands(script);
        expect(curls.filter((c) => !/%\{http_code\}|\s-i\s/.test(c) || !/# → \d{3}/.test(c))).toEqual([]);
        expect(expected).toHaveLength(curls.length);
        // The reader's own settings: the service's address, and (where used) the operator token.
        const text = readFileSync(path.join(ROOT, doc), 'utf8');
        const settings = fencedBlocks(text)
          .filter((b) => runsIn(b.info, mode))
          .flatMap((b) => b.code.split('\n'))
          .filter((l) => READER_SETTING.test(l));
        expect(settings).toContain('export API=http://127.0.0.1:8080');

        const dir = await mkdtemp(path.join(scratch, 'doc-'));
        const before = (await run('git', ['status', '--porcelain'], { cwd: ROOT })).stdout;
        const result = await runDocument(script, service, dir);

        expect({
          statuses: result.statuses,
          exit: result.code,
          out: result.code === 0 ? '' : result.out,
        }).toEqual({
          statuses: expected,
          exit: 0,
          out: '',
        });
        expect(contractViolations(apiRecords(result.records))).toEqual([]);
        // A document that runs the evidence CLI shows it verifying the bundle; no other prints that line.
        expect(
          /^OK evidence bundle for mandate mdt_\S+ verified against the pinned keys$/m.test(result.out),
        ).toBe(script.includes('mandate-evidence.js'));
        // Every file the script wrote is in the directory its `cd "$(mktemp -d)"` made, none in the clone.
        expect((await run('git', ['status', '--porcelain'], { cwd: ROOT })).stdout).toBe(before);
        const written = writtenFiles(script).filter((f) => !f.startsWith('/'));
        expect(written.filter((name) => existsSync(path.join(ROOT, name)))).toEqual([]);
        // A script that writes files first makes its one work directory, and they are all in it.
        const work = readdirSync(dir, { withFileTypes: true }).filter(
          (d) => d.isDirectory() && d.name.startsWith('tmp.'),
        );
        const workDir = work.length === 1 ? path.join(dir, work[0]!.name) : undefined;
        expect({
          cdIntoTemp: written.length === 0 || /^cd "\$\(mktemp -d\)"/m.test(script),
          oneWorkDir: written.length === 0 || workDir !== undefined,
          missing: written.filter((name) => workDir === undefined || !existsSync(path.join(workDir, name))),
        }).toEqual({ cdIntoTemp: true, oneWorkDir: true, missing: [] });
      },
      180_000,
    );
  });
}

describe('the docs, as a newcomer follows them', () => {
  it('when the docs are read, then the README tour, its embedded-only block and every guide with commands are found, and no block carries an unknown marker', () => {
    expect(DOCUMENTS).toEqual(
      expect.arrayContaining([
        'README.md',
        'docs/GETTING-STARTED.md',
        'docs/VERIFY-AND-IDENTITY.md',
        'docs/DASHBOARD.md',
        'docs/DEPLOYMENT.md',
        'docs/TROUBLESHOOTING.md',
      ]),
    );
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    // The README keeps to its size, and to its two set-up commands.
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    expect(
      fencedBlocks(readme)[0]!
        .code.split('\n')
        .map((l) => l.split(/\s+#/)[0]!.trim()),
    ).toEqual(['npm start', 'npm test']);
    // The JWT of the tour comes from the development sign-in, under npm start only.
    expect(scriptOf('README.md', 'embedded')).toContain('/dashboard-dev/sign-in');
    expect(scriptOf('README.md', 'services')).not.toContain('/dashboard-dev/');
    for (const doc of [...DOCUMENTS, 'docs/PERFORMANCE.md', 'docs/TESTING.md'])
      for (const b of fencedBlocks(readFileSync(path.join(ROOT, doc), 'utf8')))
        expect(() => runsIn(b.info, 'embedded')).not.toThrow();
  });

  it('when npm start is named in a banner, then the sections it points at exist', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    // scripts/embedded.ts and scripts/services.ts point at these two README sections.
    expect(readme).toMatch(/^## API walk-through$/m);
    expect(readme).toMatch(/^## Dashboard$/m);
    expect(readFileSync(path.join(ROOT, 'scripts/embedded.ts'), 'utf8')).toContain(
      'README.md, section "API walk-through"',
    );
    expect(readFileSync(path.join(ROOT, 'scripts/services.ts'), 'utf8')).toContain(
      'README.md, "API walk-through"',
    );
  });

  it('when a file the docs write lands in the clone by mistake, then git does not offer it for a commit and the prettier check of npm test skips it', async () => {
    const written = [...new Set(DOCUMENTS.flatMap((doc) => writtenFiles(scriptOf(doc, 'embedded'))))].filter(
      (f) => !f.startsWith('/'),
    );
    expect(written).toEqual(
      expect.arrayContaining(['tenant.json', 'mandate.json', 'agent-key.json', 'bundle.json', 'jwks.json']),
    );
    // The prettier CLI answers from the repo's .prettierignore, as `npm test`'s `prettier --check .` reads it.
    const prettierIgnores = async (name: string) =>
      JSON.parse((await run(process.execPath, [PRETTIER, '--file-info', name], { cwd: ROOT })).stdout)
        .ignored as boolean;
    const answers = await Promise.all(
      written.map(async (name) => ({
        name,
        git: await run('git', ['check-ignore', '--no-index', name], { cwd: ROOT }).then(
          () => true,
          () => false,
        ),
        // prettier has no parser for .txt: it never checks such a file.
        prettier: name.endsWith('.txt') ? true : await prettierIgnores(name),
      })),
    );
    expect(answers).toEqual(written.map((name) => ({ name, git: true, prettier: true })));
    // The project's own JSON stays tracked and checked.
    await expect(run('git', ['check-ignore', '--no-index', 'package.json'], { cwd: ROOT })).rejects.toThrow();
    expect(await prettierIgnores('package.json')).toBe(false);
  }, 180_000);
});

describeMode(
  'embedded',
  () => startNpmStart(),
  async () => undefined,
);

const namespace = `test-docs-${newId('req')}`;
describeMode(
  'services',
  () => startServicesLauncher(namespace),
  async () => {
    await deleteTopology(namespace).catch(() => undefined);
    await deleteRedisKeys(`${namespace}:*`);
    // The event spools of gateway and verify (`<service>-<namespace>-<port>` under the OS temp dir).
    const spools = path.join(tmpdir(), 'mandate-event-spool');
    if (existsSync(spools))
      for (const dir of readdirSync(spools).filter((d) => d.includes(`-${namespace}-`)))
        await rm(path.join(spools, dir), { recursive: true, force: true });
  },
);
