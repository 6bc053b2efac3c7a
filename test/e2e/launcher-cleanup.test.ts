import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { getPriority, tmpdir } from 'node:os';
import path from 'node:path';
import { newId } from '@mandate/shared/core';
import { startScript, type ScriptProcess } from '../support/script-process';
import { deleteRedisKeys, deleteTopology, eventually, freePort } from '../support/stack';

const ROOT = path.resolve(__dirname, '../..');
/** Where a service's default event spool lives (defaultSpoolDir): `<service>-<namespace>-<port>`. */
const SPOOL_ROOT = path.join(tmpdir(), 'mandate-event-spool');

/** label → pid and port of every process the launcher spawned, from its `<label> pid <pid> <url> starting` lines. */
function spawnedBy(lines: string[]): Map<string, { pid: number; port: number }> {
  const out = new Map<string, { pid: number; port: number }>();
  for (const l of lines) {
    const m = /^\[launcher\] (\S+) pid (\d+) http:\/\/127\.0\.0\.1:(\d+) starting$/.exec(l);
    if (m) out.set(m[1]!, { pid: Number(m[2]), port: Number(m[3]) });
  }
  return out;
}

/** Whether `pid` is a live process (a zombie waiting to be reaped counts as gone). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Whether something accepts connections on 127.0.0.1:`port`. */
function bound(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The nice value of a live process (/proc/<pid>/stat, field 19). */
function niceOf(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);
}

/** What is still there of what the launcher spawned: live pids and bound ports, by label. */
async function leftovers(spawned: Map<string, { pid: number; port: number }>): Promise<string[]> {
  const left: string[] = [];
  for (const [label, { pid, port }] of spawned) {
    if (alive(pid)) left.push(`${label} pid ${pid} alive`);
    if (await bound(port)) left.push(`${label} port ${port} bound`);
  }
  return left;
}

/** The environment of one launcher run, in a namespace of its own (one verify replica: fewer processes). */
function launcherEnv(namespace: string, port: number, extra: Record<string, string> = {}) {
  return {
    PORT: String(port),
    LOG_LEVEL: 'warn',
    VERIFY_REPLICAS: '1',
    AMQP_NAMESPACE: namespace,
    REDIS_PREFIX: `${namespace}:`,
    ...extra,
  };
}

/** `npm run start:services` (node --import tsx scripts/services.ts) to its exit; what it printed, in lines. */
function launchToExit(
  env: Record<string, string>,
  /** Called with everything printed so far, each time more is printed. */
  onOutput?: (lines: string[]) => void,
): Promise<{ code: number | null; lines: string[] }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts/services.ts')], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const printed = (d: Buffer) => {
      out += d.toString();
      onOutput?.(out.split('\n').filter(Boolean));
    };
    child.stdout.on('data', printed);
    child.stderr.on('data', printed);
    // Should the launcher hang, the test fails on its timeout; it must not outlive the test.
    const timer = setTimeout(() => child.kill('SIGKILL'), 140_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, lines: out.split('\n').filter(Boolean) });
    });
  });
}

describe('npm run start:services leaves no process behind', () => {
  const namespaces: string[] = [];
  const spawnedInTest: number[] = [];

  afterEach(() => {
    // A failed assertion must not leave services running for the next test.
    for (const pid of spawnedInTest.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });

  afterAll(async () => {
    for (const ns of namespaces) {
      await deleteTopology(ns).catch(() => undefined);
      await deleteRedisKeys(`${ns}:*`);
    }
  }, 30_000);

  // A variable only that service reads, with a value its configuration refuses: the launcher's own
  // check (scripts/launch-config.ts) finds it before anything is spawned.
  it.each([
    ['mandates', 'SNAPSHOT_TTL_SECONDS'],
    ['audit', 'AUDIT_PREFETCH'],
    ['verify', 'PUBLISH_BATCH_MAX'],
    ['gateway', 'AUTH_FAILURE_LIMIT_PER_MINUTE'],
  ])(
    'when %s would get a bad %s, then the launcher prints one config error line naming it and the service, exits 1, and spawns nothing',
    async (service, variable) => {
      const namespace = `test-${newId('req')}`;
      const result = await launchToExit(launcherEnv(namespace, await freePort(), { [variable]: '0' }));
      expect(result.code).toBe(1);
      expect(spawnedBy(result.lines).size).toBe(0);
      const errors = result.lines.filter((l) => l.startsWith('config error: '));
      expect(errors).toEqual([
        // The services that would get it, this one among them (PUBLISH_BATCH_MAX: verify and gateway).
        expect.stringMatching(new RegExp(`^config error: ${variable}: .* \\((.+, )?${service}(, .+)?\\)$`)),
      ]);
      expect(result.lines.filter((l) => /^(\[\S+\] )?\s+at /.test(l))).toEqual([]);
    },
    150_000,
  );

  it('when a weak INTERNAL_TOKEN_SECRET would reach every service, then the launcher says so in one line naming all five and spawns nothing', async () => {
    const namespace = `test-${newId('req')}`;
    const result = await launchToExit(
      launcherEnv(namespace, await freePort(), { INTERNAL_TOKEN_SECRET: 'short' }),
    );
    expect(result.code).toBe(1);
    expect(spawnedBy(result.lines).size).toBe(0);
    expect(result.lines.filter((l) => l.startsWith('config error: '))).toEqual([
      'config error: INTERNAL_TOKEN_SECRET: must be at least 32 characters (e.g. openssl rand -hex 32) (identity, mandates, audit, verify, gateway)',
    ]);
  }, 150_000);

  // Found in identity's wiring, once its store and bus are up (the launcher sets WALLET_PUBLIC_URL):
  // the process was spawned and fails its start.
  it('when identity fails at start (WALLET_SUBJECT_SECRET=0), then the launcher says so in one line, exits 1, and no process it spawned is alive nor any port it handed out bound', async () => {
    const [service, variable] = ['identity', 'WALLET_SUBJECT_SECRET'];
    const namespace = `test-${newId('req')}`;
    namespaces.push(namespace);
    const result = await launchToExit(launcherEnv(namespace, await freePort(), { [variable]: '0' }));
    const spawned = spawnedBy(result.lines);
    spawnedInTest.push(...[...spawned.values()].map((s) => s.pid));

    expect(result.code).toBe(1);
    expect(spawned.has(service)).toBe(true);
    expect(await leftovers(spawned)).toEqual([]);
    // The service's own line, once; the launcher's one line; no stack trace anywhere.
    expect(result.lines.filter((l) => l.startsWith(`[${service}] config error: ${variable}: `))).toHaveLength(
      1,
    );
    expect(result.lines).toContain(`[launcher] ${service} exited during start (code 1); its output is above`);
    expect(result.lines.filter((l) => /^(\[\S+\] )?\s+at /.test(l))).toEqual([]);
    expect(result.lines.at(-1)).toBe('[launcher] stopped (exit 1)');
  }, 150_000);

  it('when the gateway fails at start after two verify replicas opened their event spools, then no spool directory of the run is left', async () => {
    const namespace = `test-${newId('req')}`;
    namespaces.push(namespace);
    // Something else takes the gateway's port once both replicas are starting (the launcher checks
    // the port before it starts anything, and starts the gateway only once the replicas are ready),
    // so the gateway cannot listen and exits.
    const holder = createServer((_req, res) => res.writeHead(503).end());
    const port = await freePort();
    let taken: Promise<void> | undefined;
    try {
      const result = await launchToExit(launcherEnv(namespace, port, { VERIFY_REPLICAS: '2' }), (lines) => {
        const replicas = [...spawnedBy(lines).keys()].filter((l) => l.startsWith('verify-'));
        if (replicas.length === 2)
          taken ??= new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
      });
      await taken;
      const spawned = spawnedBy(result.lines);
      spawnedInTest.push(...[...spawned.values()].map((s) => s.pid));
      expect(result.code).toBe(1);
      // The replicas had started (each with a spool) before the gateway failed.
      expect([...spawned.keys()].filter((l) => l.startsWith('verify-'))).toHaveLength(2);
      expect(result.lines).toContain('[launcher] gateway exited during start (code 1); its output is above');
      const spools = readdirSync(SPOOL_ROOT).filter((d) => d.includes(`-${namespace}-`));
      expect(spools).toEqual([]);
    } finally {
      if (holder.listening) await new Promise((resolve) => holder.close(resolve));
    }
  }, 150_000);

  describe('when the launcher itself is killed', () => {
    let launcher: ScriptProcess | undefined;
    afterEach(async () => {
      await launcher?.stop();
    });

    it('when the launcher is killed with SIGKILL, then every service it started exits on its own and frees its port', async () => {
      const namespace = `test-${newId('req')}`;
      namespaces.push(namespace);
      launcher = await startScript(
        'scripts/services.ts',
        launcherEnv(namespace, await freePort()),
        (lines) => lines.some((l) => l.includes('Ctrl-C stops every service')),
        'the launcher',
      );
      const spawned = spawnedBy(launcher.lines);
      spawnedInTest.push(...[...spawned.values()].map((s) => s.pid));
      expect([...spawned.keys()].sort()).toEqual(['audit', 'gateway', 'identity', 'mandates', 'verify']);
      expect(await leftovers(spawned)).toHaveLength(10);
      // Audit's background work yields the CPU to the request path (docs/DEPLOYMENT.md, "CPU priority");
      // the others keep the priority they were started with (this test's, which a runner may have lowered).
      const own = getPriority();
      expect(Object.fromEntries([...spawned].map(([label, { pid }]) => [label, niceOf(pid)]))).toEqual({
        audit: Math.max(own, 10),
        gateway: own,
        identity: own,
        mandates: own,
        verify: own,
      });

      launcher.child.kill('SIGKILL');
      await launcher.exited;
      // Nobody signals them: each notices its launcher's IPC channel closing and stops.
      await eventually(
        async () => ((await leftovers(spawned)).length === 0 ? true : undefined),
        30_000,
        'the services of a killed launcher to exit',
      );
    }, 180_000);
  });
});
