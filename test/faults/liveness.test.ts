import { mongoStackEnv, type MongoStackEnv } from '../support/mongo-standin';
import { eventually, newSigningKey, startService, type ServiceProcess } from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { randomBytes } from 'node:crypto';
import { superviseLiveness, type LivenessSupervisor } from '../../scripts/services';
import { withPort } from './producers';

/**
 * The liveness restart (docs/DEPLOYMENT.md, "Liveness"): mandates, a process of its own on its
 * MongoDB adapter, reaches the MongoDB stand-in through a proxy, under the launcher's liveness watch
 * (`superviseLiveness`, what `npm run start:services` runs) with a short bound. A cut shorter than
 * the bound restarts nothing. A process that cannot reach MongoDB past the bound (here MongoDB hangs
 * for it: connections accepted, nothing answered, until the watch has stopped it; the state of a
 * driver stuck on a dead socket looks the same from outside) is restarted, and the new one is whole.
 */
const FAIL_AFTER_MS = 10_000;

const status = async (url: string) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(8_000) });
  return {
    status: res.status,
    body: (await res.json()) as { status: string; checks: Record<string, string> },
  };
};

describe('liveness: a stuck process is restarted, a short outage restarts nothing (mandates on the MongoDB stand-in)', () => {
  let databases: MongoStackEnv;
  let proxy: TcpProxy;
  let mandates: ServiceProcess;
  let supervisor: LivenessSupervisor;
  const said: string[] = [];

  beforeAll(async () => {
    databases = mongoStackEnv('liveness');
    const mongo = new URL(databases.env.mandates.MONGO_URL!);
    proxy = await startTcpProxy(mongo.hostname, Number(mongo.port || 27017));
    mandates = await startService('mandates', {
      ...databases.env.mandates,
      MONGO_URL: withPort(mongo.toString(), proxy.port),
      INTERNAL_TOKEN_SECRET: randomBytes(32).toString('hex'),
      LOCAL_SIGNING_KEY: newSigningKey(),
      LIVENESS_FAIL_AFTER_MS: String(FAIL_AFTER_MS),
    });
    supervisor = superviseLiveness(
      [mandates],
      {},
      {
        intervalMs: 500,
        failures: 2,
        say: (line) => said.push(line),
      },
    );
  }, 180_000);

  afterAll(async () => {
    supervisor?.stop();
    await Promise.all((supervisor?.processes ?? [mandates]).map((p) => p?.stop()));
    await proxy?.close();
    await databases?.drop();
  }, 60_000);

  it('when MongoDB is cut for less than LIVENESS_FAIL_AFTER_MS, then /livez stays 200 while /readyz says 503, and nothing is restarted', async () => {
    expect(await status(`${mandates.url}/livez`)).toMatchObject({ status: 200, body: { status: 'alive' } });
    const pid = mandates.child.pid;
    proxy.cut();
    const cutAt = Date.now();
    // /livez has seen the store down (and still answers 200): the outage is under way.
    const during = await eventually(
      async () => {
        const live = await status(`${mandates.url}/livez`);
        return Object.values(live.body.checks).some((v) => v.includes('down for')) ? live : undefined;
      },
      30_000,
      '/livez to see the store down',
    );
    const ready = await status(`${mandates.url}/readyz`);
    proxy.restore();
    const downMs = Date.now() - cutAt;
    await eventually(
      async () => ((await status(`${mandates.url}/readyz`)).status === 200 ? true : undefined),
      20_000,
      'mandates ready again',
    );
    const recoveredMs = Date.now() - cutAt - downMs;
    console.log(`[liveness] short cut: down ${downMs} ms, ready again ${recoveredMs} ms after the cut ended`);
    expect(during.status).toBe(200);
    expect(ready.status).toBe(503);
    expect(recoveredMs).toBeLessThan(10_000);
    expect(supervisor.restarts).toEqual([]);
    expect(supervisor.processes[0]!.child.pid).toBe(pid);
  }, 90_000);

  it('when MongoDB hangs for the process past LIVENESS_FAIL_AFTER_MS, then /livez fails, the watch restarts it on the same port, and the new process is ready and alive', async () => {
    const before = supervisor.processes[0]!;
    proxy.hang();
    const frozenAt = Date.now();
    // Only the stuck process meets the hang: it ends when the watch has stopped that process.
    void before.exited.then(() => proxy.restore());
    const restarted = await eventually(
      () => (supervisor.restarts.length > 0 ? supervisor.restarts[0] : undefined),
      150_000,
      'the liveness watch to restart mandates',
      200,
    );
    const restartedMs = Date.now() - frozenAt;
    const after = supervisor.processes[0]!;
    const ready = await status(`${after.url}/readyz`);
    const live = await status(`${after.url}/livez`);
    console.log(`[liveness] stuck: restarted and healthy ${restartedMs} ms after MongoDB hung`);
    expect(restarted).toEqual({ name: before.name, oldPid: before.child.pid, newPid: after.child.pid });
    expect(after.child.pid).not.toBe(before.child.pid);
    expect(before.child.exitCode !== null || before.child.signalCode !== null).toBe(true);
    expect(after.url).toBe(before.url);
    // Not before the bound: a process is never restarted for a shorter outage.
    expect(restartedMs).toBeGreaterThan(FAIL_AFTER_MS);
    expect(ready).toMatchObject({ status: 200, body: { status: 'ready' } });
    expect(live).toMatchObject({ status: 200, body: { status: 'alive' } });
    expect(said).toEqual([`${before.name} restarted: /livez failed 2 times`]);
  }, 240_000);
});
