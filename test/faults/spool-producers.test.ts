import { createTenant, startStack, type ServiceProcess, type Stack } from '../support/stack';
import { expectStoredOnce, restart, waitFor, noLimits, wholeAgain, WHOLE_WITHIN_MS } from './producers';
import { Produced, createVerifyRevokeRetrying, type CountedType } from './workload';

/**
 * The spooling producers under a SIGKILL: a verify replica (VERIFICATION_PERFORMED) and the
 * gateway (API_CALL) are killed mid-stream and restarted on the same port, so with the same spool
 * directory. The five services (two verify replicas) run as processes on the real RabbitMQ and
 * Redis, with a batching window wide enough that the kill always finds events of answered calls
 * not yet at the broker. Each mandate is created and verified through the gateway; a step that
 * fails is retried under a new request id, and every step whose answer the client read must have
 * its events stored exactly once: its API_CALL whatever the status, its VERIFICATION_PERFORMED
 * when 200.
 */
const NO_LIMITS = noLimits('mandates.create');

const TYPES: CountedType[] = ['MANDATE_CREATED', 'VERIFICATION_PERFORMED', 'API_CALL'];
/**
 * The publishers' batching window, 5 s instead of 5 ms: the events of the answers given in the
 * last seconds are then certainly still inside the process when it is killed, not already at the
 * broker, so the kill lands where a loss would be.
 */
const BATCH_WINDOW_MS = '5000';
/** The probe's events wait out that window too: on top of the 10 s bound, not inside it. */
const BATCH_DELAY_MS = Number(BATCH_WINDOW_MS);
const COUNT = 60;
const KILL_AFTER = 20;

describe('the spooling producers (verify, gateway) under a SIGKILL mid-stream (five processes, real RabbitMQ and Redis)', () => {
  let stack: Stack;
  const restarted: ServiceProcess[] = [];

  beforeAll(async () => {
    stack = await startStack(
      {
        gateway: { PLAN_OVERRIDES: NO_LIMITS, PUBLISH_BATCH_DELAY_MS: BATCH_WINDOW_MS },
        verify: { PUBLISH_BATCH_DELAY_MS: BATCH_WINDOW_MS },
      },
      { replicas: { verify: 2 } },
    );
  }, 240_000);

  afterAll(async () => {
    // The gateway first (no new work), then the rest of the stack.
    for (const p of restarted.reverse()) await p.stop();
    await stack?.stop();
  }, 60_000);

  /**
   * `count` mandates created and verified, 20 at a time; `victim` is killed with SIGKILL the moment
   * the client has read the `killAfter`-th mandate's verify answer, so the events of the answers
   * just given are still on their way (the batching window, the broker's confirm) when it dies.
   */
  async function loadKilling(label: string, count: number, killAfter: number, victim: ServiceProcess) {
    const created = await createTenant(stack, { name: label, plan: 'enterprise' });
    const produced = new Produced();
    let doneAtKill = -1;
    const load = createVerifyRevokeRetrying(stack.gateway.url, created.auth, {
      count,
      concurrency: 20,
      label,
      produced,
      deadlineMs: 100_000,
      onDone: () => {
        if (doneAtKill >= 0 || produced.done < killAfter) return;
        doneAtKill = produced.done;
        victim.child.kill('SIGKILL');
      },
    });
    await waitFor(() => doneAtKill >= 0, `the first ${killAfter} mandates`);
    await victim.exited;
    return { tenantId: created.tenant.id, produced, load, count, doneAtKill };
  }

  const audit = () => ({ url: stack.services.audit.url, internalSecret: stack.internalSecret });

  /** Whole again within 10 s of the restarted process being healthy: a probe tenant's create and verify, their events stored. */
  async function wholeAfterRestart(label: string, healthyAt: number): Promise<number> {
    const probe = await createTenant(stack, { name: `${label} probe`, plan: 'enterprise' });
    const { storedMs } = await wholeAgain(
      stack.gateway.url,
      audit(),
      { tenantId: probe.tenant.id, auth: probe.auth },
      healthyAt,
      label,
    );
    return storedMs;
  }

  it('when a verify replica is killed with SIGKILL mid-stream and restarted, then every VERIFICATION_PERFORMED answered 200 is stored once', async () => {
    const killed = stack.replicas.verify[0]!;
    const run = await loadKilling('verify-kill', COUNT, KILL_AFTER, killed);
    const killedAt = Date.now();
    restarted.push(await restart('verify', killed));
    const restartMs = Date.now() - killedAt;
    const wholeMs = await wholeAfterRestart('verify-kill', killedAt + restartMs);
    // While the killed replica was down (its restart takes seconds), the other one kept serving:
    // mandates went through create, verify and revoke in the meantime.
    const doneWhileDown = run.produced.done - run.doneAtKill;
    await run.load;
    await expectStoredOnce(
      audit(),
      run,
      TYPES,
      `verify replica SIGKILL mid-stream + restart, ${COUNT} mandates`,
      {
        mandates_done_at_kill: run.doneAtKill,
        restart_ms: restartMs,
        load_ms_after_kill: Date.now() - killedAt,
        mandates_done_while_down: doneWhileDown,
        whole_ms_after_restart: wholeMs,
      },
    );
    expect(wholeMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS + BATCH_DELAY_MS);
    expect(run.doneAtKill).toBeLessThan(run.count);
    expect(doneWhileDown).toBeGreaterThan(0);
  }, 150_000);

  it('when the gateway is killed with SIGKILL mid-stream and restarted, then every API_CALL of an answer a client read is stored once', async () => {
    const killed = stack.gateway;
    const run = await loadKilling('gateway-kill', COUNT, KILL_AFTER, killed);
    const killedAt = Date.now();
    restarted.push(await restart('gateway', killed));
    const restartMs = Date.now() - killedAt;
    const wholeMs = await wholeAfterRestart('gateway-kill', killedAt + restartMs);
    await run.load;
    await expectStoredOnce(audit(), run, TYPES, `gateway SIGKILL mid-stream + restart, ${COUNT} mandates`, {
      mandates_done_at_kill: run.doneAtKill,
      restart_ms: restartMs,
      load_ms_after_kill: Date.now() - killedAt,
      whole_ms_after_restart: wholeMs,
    });
    expect(wholeMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS + BATCH_DELAY_MS);
    expect(run.doneAtKill).toBeLessThan(run.count);
    // The kill cut requests off: their clients read no answer (and expect no event).
    expect(run.produced.clientErrors.length).toBeGreaterThan(0);
  }, 150_000);
});
