import { apiClient, createTenant, startStack, type ServiceProcess, type Stack } from '../support/stack';
import { mongoStackEnv, type MongoStackEnv } from '../support/mongo-standin';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';
import { MONGO_TARGET } from '@mandate/shared/testing';
import {
  expectRevokedInTheirLists,
  expectStoredOnce,
  restart,
  sigkill,
  waitFor,
  withPort,
  noLimits,
  WHOLE_WITHIN_MS,
} from './producers';
import { Produced, createVerifyRevokeRetrying, type CountedType } from './workload';

/**
 * The outbox producer under faults: the mandates service, on its Mongo adapter, is killed with
 * SIGKILL mid-stream and restarted, and its MongoDB connection is cut while it writes. The five
 * services run as processes on the real RabbitMQ and Redis; mandates reaches MongoDB through a TCP
 * proxy this test cuts. Each mandate is created, verified and revoked through the gateway; a step
 * that fails is retried under a new request id, and every step that answered its 2xx must have its
 * event stored exactly once (MANDATE_CREATED and MANDATE_REVOKED come from mandates' outbox).
 */
const NO_LIMITS = noLimits('mandates.create', 'mandates.lifecycle');

const TYPES: CountedType[] = ['MANDATE_CREATED', 'MANDATE_REVOKED', 'VERIFICATION_PERFORMED', 'API_CALL'];

describe(`the mandates outbox under a SIGKILL and a cut MongoDB connection (five processes, ${MONGO_TARGET})`, () => {
  let databases: MongoStackEnv;
  let mongoProxy: TcpProxy;
  let stack: Stack;
  let restarted: ServiceProcess | undefined;

  beforeAll(async () => {
    databases = mongoStackEnv('producers');
    const mongo = new URL(databases.env.mandates.MONGO_URL!);
    mongoProxy = await startTcpProxy(mongo.hostname, Number(mongo.port || 27017));
    stack = await startStack({
      mandates: { ...databases.env.mandates, MONGO_URL: withPort(mongo.toString(), mongoProxy.port) },
      identity: databases.env.identity,
      audit: databases.env.audit,
      gateway: { PLAN_OVERRIDES: NO_LIMITS },
    });
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    await restarted?.stop();
    await mongoProxy?.close();
    await databases?.drop();
  }, 60_000);

  /** `count` mandates through create, verify and revoke, 10 at a time, once the first `firstDone` are through. */
  async function loadUnderWay(label: string, count: number, firstDone: number) {
    const created = await createTenant(stack, { name: label, plan: 'enterprise' });
    const produced = new Produced();
    const load = createVerifyRevokeRetrying(stack.gateway.url, created.auth, {
      count,
      concurrency: 10,
      label,
      produced,
      revoke: true,
      // Generous: a restart under a loaded 2-core machine has taken 90 s (tsx compiles the service).
      deadlineMs: 200_000,
    });
    await waitFor(() => produced.done >= firstDone, `the first ${firstDone} mandates`);
    return { tenantId: created.tenant.id, produced, load, count };
  }

  /** Each 500 answered, with what the services logged for its request id: the error a 500 hides. */
  const internalErrors = (produced: Produced) =>
    produced.serverErrors
      .filter((e) => e.status === 500)
      .map((e) => {
        const procs = [...Object.values(stack.services), ...(restarted ? [restarted] : [])];
        const logged = procs.flatMap((p) =>
          p.output
            .join('')
            .split('\n')
            .filter((line) => line.includes(e.id))
            .map((line) => `${p.name}: ${line.slice(0, 1_500)}`),
        );
        return { id: e.id, path: e.path, logged };
      });

  const audit = () => ({ url: stack.services.audit.url, internalSecret: stack.internalSecret });

  /**
   * Milliseconds from `since` until a create through the gateway answers 201 again. The probe is a
   * tenant of its own, made before the fault, so the run's accounting is untouched.
   */
  async function createsAgainAfter(probe: { auth: string }, since: number, label: string): Promise<number> {
    const api = apiClient(stack.gateway.url);
    for (;;) {
      const res = await api('POST', '/v1/mandates', {
        auth: probe.auth,
        body: { principal: 'user_alice', delegate: 'agent_bob' },
      });
      if (res.status === 201) return Date.now() - since;
      if (Date.now() - since > 60_000)
        throw new Error(`${label}: no create answered 201 within 60 s: ${res.status} ${res.text}`);
      // A back-off while the service comes back, not a synchronisation: the probe is retried.
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('when the mandates process is killed with SIGKILL mid-stream and restarted, then every MANDATE_CREATED and MANDATE_REVOKED answered 2xx is stored once, the other events too, and every revocation is in its status list', async () => {
    const probe = await createTenant(stack, { name: 'mandates-kill probe', plan: 'enterprise' });
    const run = await loadUnderWay('mandates-kill', 60, 15);
    await sigkill(stack.services.mandates);
    const doneAtKill = run.produced.done;
    const killedAt = Date.now();
    restarted = await restart('mandates', stack.services.mandates);
    const restartMs = Date.now() - killedAt;
    const wholeMs = await createsAgainAfter(probe, Date.now(), 'the mandates restart');
    await run.load;
    const loadMs = Date.now() - killedAt;
    const failedSteps = [...run.produced.statuses].filter(([s]) => s >= 500).reduce((n, [, k]) => n + k, 0);
    await expectStoredOnce(audit(), run, TYPES, 'mandates SIGKILL mid-stream + restart, 60 mandates', {
      mandates_done_at_kill: doneAtKill,
      restart_ms: restartMs,
      whole_ms_after_restart: wholeMs,
      load_ms_after_kill: loadMs,
    });
    expect(wholeMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
    // The kill landed mid-stream: mandates were still to come, and steps failed while it was down.
    expect(doneAtKill).toBeLessThan(run.count);
    expect(failedSteps + run.produced.clientErrors.length).toBeGreaterThan(0);
    // The lists the restarted process serves hold every revocation answered, before the kill included.
    expect(await expectRevokedInTheirLists(stack.gateway.url, run.produced)).toBe(run.count);
  }, 330_000);

  it('when the connection to MongoDB is cut for 6 s while mandates writes, then every event answered 2xx is stored once and every revocation is in its status list', async () => {
    const probe = await createTenant(stack, { name: 'mongo-cut probe', plan: 'enterprise' });
    const run = await loadUnderWay('mongo-cut', 60, 15);
    mongoProxy.cut();
    const doneAtCut = run.produced.done;
    const answeredAtCut = [...run.produced.statuses.values()].reduce((a, b) => a + b, 0);
    // Longer than the driver's server selection timeout (5 s): the writes waiting on it fail.
    await new Promise((r) => setTimeout(r, 6_000));
    mongoProxy.restore();
    const wholeMs = await createsAgainAfter(probe, Date.now(), 'the MongoDB cut');
    await run.load;
    const failedSteps = [...run.produced.statuses].filter(([s]) => s >= 500).reduce((n, [, k]) => n + k, 0);
    await expectStoredOnce(audit(), run, TYPES, 'MongoDB cut 6 s under mandates, 60 mandates', {
      mandates_done_at_cut: doneAtCut,
      steps_answered_at_cut: answeredAtCut,
      whole_ms_after_cut: wholeMs,
    });
    expect(wholeMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
    expect(doneAtCut).toBeLessThan(run.count);
    // The cut bit: writes that waited for MongoDB past the selection timeout failed (5xx, no event expected).
    expect(failedSteps).toBeGreaterThan(0);
    // A database outage is a dependency down (503, retry later), never an internal error.
    expect(internalErrors(run.produced)).toEqual([]);
    expect(await expectRevokedInTheirLists(stack.gateway.url, run.produced)).toBe(run.count);
  }, 330_000);
});
