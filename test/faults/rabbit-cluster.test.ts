import { amqpTopology } from '@mandate/shared/events';
import { startRabbitCluster, type RabbitCluster, type RabbitNodeName } from '../support/rabbit-cluster';
import { createTenant, eventually, startStack, type Stack } from '../support/stack';
import { runLoad, serverErrors, type Call } from './calls';
import { expectStoredOnce, noLimits, waitFor, wholeAgain, WHOLE_WITHIN_MS, type Whole } from './producers';
import { Produced, type CountedType } from './workload';

/**
 * The fault matrix's RabbitMQ cluster row (docs/TESTING.md, "Fault matrix"): the five services as
 * processes on a private three-node RabbitMQ cluster (test/support/rabbit-cluster.ts), AMQP_URL
 * listing the three nodes (docs/CONFIGURATION.md, "Every service"), each service's list starting
 * at another node so that every node holds some of the connections. Under load, one node that does
 * not lead the audit queue is shut down (and started again), then the node that leads it is
 * SIGKILLed. Every event of a 2xx is stored once, none doubled; calls answer 2xx during each
 * stop; every 5xx is a 503 with Retry-After; whole within 10 s of each stop.
 */
const TYPES: CountedType[] = ['MANDATE_CREATED', 'VERIFICATION_PERFORMED', 'API_CALL'];
/** How long each stopped node stays down: the load runs on the other two meanwhile. */
const DOWN_MS = 10_000;

describe('a three-node RabbitMQ cluster with quorum queues loses a node, then the audit queue’s leader, under load', () => {
  let cluster: RabbitCluster;
  let stack: Stack;
  /** Set once the file is over: a load a failed test left running stops, so jest can exit. */
  let halted = false;
  const auditQueue = () => amqpTopology(stack.namespace).auditQueue;

  beforeAll(async () => {
    cluster = await startRabbitCluster();
    const [a, b, c] = cluster.nodes.map((n) => n.name);
    stack = await startStack({
      all: { AMQP_URL: cluster.amqpUrl(a) },
      mandates: { AMQP_URL: cluster.amqpUrl(b) },
      verify: { AMQP_URL: cluster.amqpUrl(c) },
      audit: { AMQP_URL: cluster.amqpUrl(b) },
      gateway: { AMQP_URL: cluster.amqpUrl(c), PLAN_OVERRIDES: noLimits('mandates.create') },
    });
  }, 150_000);

  afterAll(async () => {
    halted = true;
    await stack?.stop();
    await cluster?.stop();
  }, 60_000);

  it('when one node is shut down and then the audit queue’s leader is SIGKILLed under load, then every event of a 2xx is stored once, calls answer 2xx during each stop, every 5xx is a 503 with Retry-After, and the stack is whole within 10 s of each stop', async () => {
    const started = Date.now();
    // Declared on three nodes: a quorum queue's members are the cluster's nodes (docs/KUBERNETES.md, "RabbitMQ cluster").
    const declared = await cluster.queue(auditQueue());
    expect({ type: declared.type, members: [...declared.members].sort() }).toEqual({
      type: 'quorum',
      members: cluster.nodes.map((n) => n.name).sort(),
    });

    const tenant = await createTenant(stack, { name: 'rabbit-cluster', plan: 'enterprise' });
    const probe = await createTenant(stack, { name: 'rabbit-cluster probe', plan: 'enterprise' });
    const produced = new Produced();
    const calls: Call[] = [];
    let stopping = false;
    const load = runLoad(
      stack.gateway.url,
      tenant.auth,
      'rmq',
      produced,
      calls,
      () => stopping,
      6,
      () => halted,
    );
    await waitFor(() => produced.done >= 20, 'the first 20 mandates');
    const audit = { url: stack.services.audit.url, internalSecret: stack.internalSecret };
    /** What the cluster and the services said, printed when the stack is not whole: what the probe alone cannot tell. */
    const printTrouble = async (label: string) => {
      const queue = await cluster.queue(auditQueue()).catch((err: unknown) => String(err));
      const lines = [stack.gateway, ...Object.values(stack.replicas).flat()].flatMap((p) =>
        p.output
          .join('')
          .split('\n')
          .filter((l) => /"level":(40|50|60)|RabbitMQ/.test(l))
          .map((l) => `${p.name}: ${l}`),
      );
      console.log(
        `not whole after ${label}; audit queue ${JSON.stringify(queue)}\nservices' RabbitMQ lines, warnings and errors (last 80):\n${lines.slice(-80).join('\n')}`,
      );
    };

    /**
     * Stops `node` by `how`, then: whole within 10 s of the node being gone (a shutdown takes
     * seconds under load: it closes its connections and hands its queues over first), and the
     * calls answered from the stop's start until the node had been down DOWN_MS.
     */
    const stopNode = async (node: RabbitNodeName, how: 'shutdown' | 'kill', label: string) => {
      const stoppingAt = Date.now();
      await (how === 'shutdown' ? cluster.shutdown(node) : cluster.kill(node));
      const stoppedAt = Date.now();
      const whole: Whole = await wholeAgain(
        stack.gateway.url,
        audit,
        { tenantId: probe.tenant.id, auth: probe.auth },
        stoppedAt,
        label,
      ).catch(async (err: unknown) => {
        await printTrouble(label);
        throw err;
      });
      // The outage's length is the scenario: the load runs on the two other nodes this long.
      await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + DOWN_MS - Date.now())));
      const during = calls.filter((c) => c.sentAt >= stoppingAt && c.sentAt < stoppedAt + DOWN_MS);
      return {
        whole,
        stopMs: stoppedAt - stoppingAt,
        answered2xx: during.filter((c) => c.status !== undefined && c.status < 300).length,
        failed: during.filter((c) => (c.status ?? 0) >= 500 || c.error !== undefined).length,
      };
    };

    // 1. A node that does not lead the audit queue, shut down, then started again.
    const leaderBefore = (await cluster.queue(auditQueue())).leader as RabbitNodeName;
    const follower = cluster.nodes.map((n) => n.name).find((n) => n !== leaderBefore)!;
    const first = await stopNode(follower, 'shutdown', 'follower-stop');
    await cluster.start(follower);
    // Back in the queue's Raft group before the next stop: two of three must stay to keep a quorum.
    await eventually(
      async () => ((await cluster.queue(auditQueue())).online.length === 3 ? true : undefined),
      30_000,
      `${follower} back among the audit queue's online members`,
    );

    // 2. The node that leads the audit queue now, SIGKILLed (it stays down).
    const leader = (await cluster.queue(auditQueue())).leader as RabbitNodeName;
    const second = await stopNode(leader, 'kill', 'leader-kill');
    const after = await cluster.queue(auditQueue());
    stopping = true;
    await load;

    await expectStoredOnce(
      audit,
      { tenantId: tenant.tenant.id, produced, count: produced.done },
      TYPES,
      'RabbitMQ cluster: a follower shut down and restarted, then the audit queue leader SIGKILLed',
      {
        follower_shutdown_ms: first.stopMs,
        follower_whole_answered_ms: first.whole.answeredMs,
        follower_whole_stored_ms: first.whole.storedMs,
        follower_down_2xx: first.answered2xx,
        follower_down_failed: first.failed,
        leader_kill_ms: second.stopMs,
        leader_whole_answered_ms: second.whole.answeredMs,
        leader_whole_stored_ms: second.whole.storedMs,
        leader_down_2xx: second.answered2xx,
        leader_down_failed: second.failed,
        // Publishes the broker nacked, each followed by a new connection (RabbitPublisher).
        publish_nacks: [stack.gateway, ...Object.values(stack.replicas).flat()]
          .flatMap((p) => p.output.join('').split('\n'))
          .filter((l) => l.includes('amqp publish nacked')).length,
        run_ms: Date.now() - started,
      },
    );
    process.stdout.write(
      `[fault] RabbitMQ cluster: stopped ${follower} (follower), then ${leader} (leader); new leader ${after.leader}, online ${after.online.join(', ')}\n`,
    );
    expect(leader).not.toBe(follower);
    // A new leader among the nodes left, the queue still served by two of its three members.
    expect(after.leader).not.toBe(leader);
    expect(after.online).toHaveLength(2);
    // Publishing went on: calls answered 2xx (each with its events) while each node was down.
    expect(first.answered2xx).toBeGreaterThan(0);
    expect(second.answered2xx).toBeGreaterThan(0);
    // Every failure a 503 with Retry-After (docs/API.md, "Retries"), never a 500, never unanswered.
    expect(calls.filter((c) => c.error !== undefined).map((c) => `${c.rid}: ${c.error}`)).toEqual([]);
    expect(serverErrors(calls).filter((e) => e.status !== 503 || !e.retryAfter)).toEqual([]);
    // Whole within 10 s of each stop (docs/TESTING.md, "Fault matrix"): answered, and its events stored.
    expect(first.whole.storedMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
    expect(second.whole.storedMs).toBeLessThanOrEqual(WHOLE_WITHIN_MS);
  }, 180_000);
});
