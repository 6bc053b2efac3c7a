import { newId } from '@mandate/shared/core';
import { startScript, type ScriptProcess } from '../support/script-process';
import { apiClient, deleteRedisKeys, deleteTopology, freePort } from '../support/stack';

interface Launcher extends ScriptProcess {
  url: string;
  operatorToken: string;
  /** label → pid of every service process, as the launcher printed them. */
  pids: Map<string, number>;
}

/** `npm run start:services`, as its script runs (tsx scripts/services.ts), in a namespace of its own. */
async function launch(namespace: string): Promise<Launcher> {
  const port = await freePort();
  const launcher = await startScript(
    'scripts/services.ts',
    {
      PORT: String(port),
      LOG_LEVEL: 'info',
      AMQP_NAMESPACE: namespace,
      REDIS_PREFIX: `${namespace}:`,
      // Two replicas whatever the machine's CPUs (the default is one per two CPUs): the gateway balances.
      VERIFY_REPLICAS: '2',
    },
    (lines) => lines.some((l) => l.includes('Ctrl-C stops every service')),
    'the launcher',
  );
  const pids = new Map<string, number>();
  for (const l of launcher.lines) {
    const m = /^\[launcher\] (\S+) pid (\d+) /.exec(l);
    if (m) pids.set(m[1]!, Number(m[2]));
  }
  const token = launcher.lines.map((l) => /export OPERATOR_TOKEN=(\S+)/.exec(l)?.[1]).find(Boolean)!;
  return { ...launcher, url: `http://127.0.0.1:${port}`, operatorToken: token, pids };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('npm run start:services (scripts/services.ts)', () => {
  const namespaces: string[] = [];
  let running: Launcher | undefined;

  afterEach(async () => {
    // A failed assertion must not leave services running.
    await running?.stop();
    for (const pid of running?.pids.values() ?? []) if (alive(pid)) process.kill(pid, 'SIGKILL');
    running = undefined;
  }, 30_000);

  afterAll(async () => {
    for (const ns of namespaces) {
      await deleteTopology(ns).catch(() => undefined);
      await deleteRedisKeys(`${ns}:*`);
    }
  }, 30_000);

  it('when started and sent SIGINT, then five services with two verify replicas answer through the gateway, the wallet works on the defaults the launcher names, every log line names its service, and every process exits', async () => {
    const namespace = `test-${newId('req')}`;
    namespaces.push(namespace);
    running = await launch(namespace);
    const { lines, pids } = running;

    expect([...pids.keys()].sort()).toEqual([
      'audit',
      'gateway',
      'identity',
      'mandates',
      'verify-1',
      'verify-2',
    ]);
    const tenant = await apiClient(running.url)('POST', '/v1/platform/tenants', {
      auth: running.operatorToken,
      body: { name: 'Launcher', plan: 'beta' },
    });
    expect(tenant.status).toBe(201);
    // The wallet works as under npm start, and the launcher says each default it chose for it.
    const session = await apiClient(running.url)('POST', '/v1/identity-verifications', {
      auth: `${tenant.body.tenant.id}:${tenant.body.api_key.api_key}`,
      body: { purpose: 'mandate' },
    });
    expect(session.status).toBe(201);
    expect(session.body.authorization_request).toMatch(/^openid4vp:\/\//);
    expect(lines.filter((l) => l.startsWith('[launcher] wallet: '))).toEqual([
      `[launcher] wallet: WALLET_PUBLIC_URL=${running.url} (the gateway's address; set it to change)`,
      '[launcher] wallet: WALLET_SUBJECT_SECRET generated for this run (wallet subject ids change at each start; set it to keep them)',
      '[launcher] wallet: the TEST PID issuer is trusted (scripts/test-wallet.ts; set WALLET_TRUST_TEST_ISSUER=false to refuse it)',
      "[launcher] wallet: the gateway accepts the wallet's sign-in tokens (a JWT_ISSUERS entry named wallet)",
    ]);
    // The generated operator token is printed once, never again.
    expect(lines.filter((l) => l.includes(running!.operatorToken))).toHaveLength(1);
    const unprefixed = lines.filter(
      (l) => l !== '' && !/^\[(launcher|gateway|mandates|identity|audit|verify-1|verify-2)\] /.test(l),
    );
    expect(unprefixed).toEqual([]);
    expect(lines.some((l) => l.startsWith('[verify-2] ') && l.includes('verify listening'))).toBe(true);

    running.child.kill('SIGINT');
    expect(await running.exited).toBe(0);
    expect([...pids.entries()].filter(([, pid]) => alive(pid))).toEqual([]);
    expect(lines.at(-1)).toBe('[launcher] stopped (exit 0)');
  }, 180_000);

  it('when one service dies, then the launcher stops the others and exits non-zero', async () => {
    const namespace = `test-${newId('req')}`;
    namespaces.push(namespace);
    running = await launch(namespace);
    const { pids } = running;

    process.kill(pids.get('verify-2')!, 'SIGKILL');
    expect(await running.exited).toBe(1);
    expect([...pids.entries()].filter(([, pid]) => alive(pid))).toEqual([]);
    expect(running.lines).toContain('[launcher] verify-2 exited (SIGKILL); stopping the others');
  }, 180_000);
});
