import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { internalTokens } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { CLOCK_SYNC_MAX_RTT_MS, SyncedClock, redisTime } from '@mandate/shared/data';
import { MONGO_TARGET, describeIfAvailable } from '@mandate/shared/testing';
import { mongoStackEnv, type MongoStackEnv } from '../support/mongo-standin';
import {
  REDIS_URL,
  apiClient,
  createTenant,
  eventually,
  freePort,
  startService,
  startStack,
  type ServiceProcess,
  type Stack,
} from '../support/stack';
import { expectStoredOnce } from './producers';
import { Produced, storedEvents, type CountedType } from './workload';

/**
 * The fault matrix's clock skew row (docs/TESTING.md, "Fault matrix"): mandates and verify run with
 * their hosts' clocks 5 s apart either way — Debian's libfaketime preloaded into the processes
 * (LD_PRELOAD, FAKETIME), so node's own Date is off, not a clock the test injects — and a mandate
 * whose validity starts and ends a few seconds ahead is asked of every replica at the same moments.
 * Time is decided on Redis's clock (docs/DECISIONS.md, "Time"), so each moment has one answer:
 * nothing early, nothing late beyond the documented bound, expiry persisted and announced once,
 * no 5xx, every answered verify's event stored once.
 */
const LIBFAKETIME =
  ['x86_64-linux-gnu', 'aarch64-linux-gnu']
    .map((arch) => `/usr/lib/${arch}/faketime/libfaketime.so.1`)
    .find((lib) => existsSync(lib)) ?? '/usr/lib/<arch>/faketime/libfaketime.so.1';

/**
 * The clock of a process `seconds` off the real one. Monotonic clocks are left alone: libuv's timers
 * and performance.now() run on CLOCK_MONOTONIC, and a skewed host's uptime is not skewed either.
 */
const skewed = (seconds: number) => ({
  LD_PRELOAD: LIBFAKETIME,
  FAKETIME: `${seconds > 0 ? '+' : ''}${seconds}`,
  FAKETIME_DONT_FAKE_MONOTONIC: '1',
});

/** The most a replica's reading of Redis's clock may be off (docs/DECISIONS.md, "Time"): half the longest round trip used. */
const BOUND_MS = CLOCK_SYNC_MAX_RTT_MS / 2;
/** How often the same requests go to every replica. */
const ROUND_MS = 100;
const VALID_IN_MS = 10_000;
const EXPIRES_IN_MS = 20_000;
/** Asked until this long after expires_at: the sweepers of both mandates processes run meanwhile. */
const AFTER_EXPIRY_MS = 8_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  target: string;
  round: number;
  /** When it was sent and read, on the test's reading of Redis's clock. */
  sentAt: number;
  readAt: number;
  status: number;
  /** A verify's reason, a read's state. */
  outcome: string;
}

describeIfAvailable(
  existsSync(LIBFAKETIME),
  `clock skew of ±5 s between mandates and verify replicas (libfaketime, ${MONGO_TARGET})`,
  `${LIBFAKETIME} (Debian's libfaketime: apt-get install -y faketime; .ci/run installs it)`,
  () => {
    let databases: MongoStackEnv;
    let stack: Stack;
    let redis: Redis;
    /** The test's reading of Redis's clock, the one the services decide on. */
    let clock: SyncedClock;
    const extra: ServiceProcess[] = [];
    /** Every mandates and verify process, with its skew in seconds. */
    let targets: { proc: ServiceProcess; skew: number; kind: 'mandates' | 'verify' }[];

    beforeAll(async () => {
      redis = new Redis(REDIS_URL);
      clock = new SyncedClock(() => redisTime(redis), createLogger('clock-skew', 'silent'), { samples: 10 });
      await clock.sync();
      databases = mongoStackEnv('skew');
      // Sweeps every 250 ms: the two mandates processes, 10 s apart, race for every expiry.
      const sweeps = { EXPIRY_SWEEP_INTERVAL_MS: '250' };
      stack = await startStack({
        mandates: { ...databases.env.mandates, ...sweeps, ...skewed(5) },
        verify: skewed(-5),
      });
      // A second mandates process on the same database, Redis and broker, 5 s behind the real
      // clock, and a second verify 5 s ahead: neither behind the gateway, both asked directly.
      const [mandatesPort, verifyPort] = await Promise.all([freePort(), freePort()]);
      const started = await Promise.allSettled([
        startService(
          'mandates',
          { ...stack.services.mandates.env, ...skewed(-5), PORT: String(mandatesPort) },
          'mandates-behind',
        ),
        startService(
          'verify',
          { ...stack.services.verify.env, ...skewed(5), PORT: String(verifyPort) },
          'verify-ahead',
        ),
      ]);
      // Whichever started is stopped by afterAll even when the other did not.
      for (const s of started) if (s.status === 'fulfilled') extra.push(s.value);
      for (const s of started) if (s.status === 'rejected') throw s.reason;
      targets = [
        { proc: stack.services.mandates, skew: 5, kind: 'mandates' },
        { proc: extra[0]!, skew: -5, kind: 'mandates' },
        { proc: stack.services.verify, skew: -5, kind: 'verify' },
        { proc: extra[1]!, skew: 5, kind: 'verify' },
      ];
    }, 300_000);

    afterAll(async () => {
      await Promise.all(extra.map((p) => p.stop()));
      await stack?.stop();
      await databases?.drop();
      redis?.disconnect();
    }, 60_000);

    const label = (t: { proc: ServiceProcess; skew: number }) =>
      `${t.proc.name} (${t.skew > 0 ? '+' : ''}${t.skew} s)`;

    /** An internal token of `tenantId` for `service`, as the gateway mints it. */
    const tokenFor = (tenantId: string, service: 'mandates' | 'verify') =>
      internalTokens(stack.internalSecret).mint(
        {
          tenantId,
          actor: { type: 'api_key', key_id: 'key_skew' },
          permissions: ['mandates:read', 'mandates:write', 'verify'],
          requestId: 'clock-skew',
        },
        service,
      );

    it('when the processes run under libfaketime, then each one’s own clock (its HTTP Date header) is off by its skew', async () => {
      const offsets = await Promise.all(
        targets.map(async (t) => {
          const sentAt = clock.now().getTime();
          const res = await fetch(`${t.proc.url}/healthz`);
          await res.arrayBuffer();
          const readAt = clock.now().getTime();
          // The header is the process's time cut to whole seconds, taken between sending and reading.
          const date = Date.parse(res.headers.get('date')!);
          const skewMs = t.skew * 1000;
          return {
            process: label(t),
            date_minus_now_ms: Math.round(date - (sentAt + readAt) / 2),
            skewed: date > sentAt + skewMs - 1000 - BOUND_MS && date <= readAt + skewMs + BOUND_MS,
          };
        }),
      );
      process.stdout.write(`[fault] clock skew, process clocks ${JSON.stringify(offsets)}\n`);
      expect(offsets.filter((o) => !o.skewed)).toEqual([]);
    }, 30_000);

    it('when a mandate becomes valid and expires while mandates and verify replicas are 5 s apart, then every replica answers each moment alike (within the bound), expiry is persisted and announced once, and every answered verify is stored once', async () => {
      const created = await createTenant(stack, { name: 'clock-skew', plan: 'enterprise' });
      const tenantId = created.tenant.id;
      const produced = new Produced();
      const t0 = clock.now().getTime();
      const validFrom = t0 + VALID_IN_MS;
      const expiresAt = t0 + EXPIRES_IN_MS;
      const res = await apiClient(stack.gateway.url)('POST', '/v1/mandates', {
        auth: created.auth,
        headers: { 'x-request-id': 'skew-create' },
        body: {
          principal: { id: 'user_skew', type: 'person' },
          delegate: { id: 'agent_skew', type: 'agent' },
          scope: { actions: ['payments:*'] },
          valid_from: new Date(validFrom).toISOString(),
          expires_at: new Date(expiresAt).toISOString(),
        },
      });
      expect(res.status).toBe(201);
      produced.byType.MANDATE_CREATED.add('skew-create');
      const mandateId: string = res.body.id;

      const tokens = {
        mandates: await tokenFor(tenantId, 'mandates'),
        verify: await tokenFor(tenantId, 'verify'),
      };
      const answers: Answer[] = [];
      const ask = async (t: (typeof targets)[number], round: number): Promise<Answer> => {
        const rid = `skew-${round}-${t.proc.name}`;
        const headers = { 'x-internal-token': tokens[t.kind], 'x-request-id': rid };
        const sentAt = clock.now().getTime();
        const answer =
          t.kind === 'verify'
            ? await fetch(`${t.proc.url}/v1/verify`, {
                method: 'POST',
                headers: { ...headers, 'content-type': 'application/json' },
                body: JSON.stringify({ mandate_id: mandateId, action: 'payments:create' }),
              })
            : await fetch(`${t.proc.url}/v1/mandates/${mandateId}`, { headers });
        const body = (await answer.json()) as { reason?: string; state?: string };
        const readAt = clock.now().getTime();
        produced.statuses.set(answer.status, (produced.statuses.get(answer.status) ?? 0) + 1);
        if (t.kind === 'verify' && answer.status === 200) produced.byType.VERIFICATION_PERFORMED.add(rid);
        return {
          target: label(t),
          round,
          sentAt,
          readAt,
          status: answer.status,
          outcome: (t.kind === 'verify' ? body.reason : body.state) ?? `(${answer.status})`,
        };
      };
      // The same requests to the four processes at once, every ROUND_MS, from the create to well past expiry.
      for (let round = 0; clock.now().getTime() < expiresAt + AFTER_EXPIRY_MS; round++) {
        const next = sleep(ROUND_MS);
        answers.push(...(await Promise.all(targets.map((t) => ask(t, round)))));
        await next;
      }

      // What the answer must be at moment `at`: docs/API.md ("Verify", "Expiry"), services/verify/README.md.
      const expected = (kind: 'mandates' | 'verify', at: number) => {
        if (at >= expiresAt) return kind === 'verify' ? 'MANDATE_EXPIRED' : 'EXPIRED';
        if (kind === 'mandates') return 'ACTIVE';
        return at >= validFrom ? 'OK' : 'MANDATE_NOT_YET_VALID';
      };
      // An answer is on time when it is the right one for some moment between its sending and its
      // reading, each widened by the bound (and the test's own reading of Redis's clock).
      const slack = BOUND_MS + clock.synced!.rttMs / 2;
      const allowed = (kind: 'mandates' | 'verify', from: number, to: number) =>
        new Set<string>(
          [from - slack, validFrom, expiresAt, to + slack]
            .filter((at) => at >= from - slack && at <= to + slack)
            .map((at) => expected(kind, at)),
        );
      const kindOf = new Map(targets.map((t) => [label(t), t.kind]));
      const relative = (at: number) =>
        at < (validFrom + expiresAt) / 2
          ? `valid_from${signed(at - validFrom)}`
          : `expires_at${signed(at - expiresAt)}`;
      const offTime = answers
        .filter((a) => !allowed(kindOf.get(a.target)!, a.sentAt, a.readAt).has(a.outcome))
        .map((a) => `${a.target}: ${a.outcome} for a request sent at ${relative(a.sentAt)} ms`);

      // Replicas of one kind asked at one moment: a different answer only within the bound of a boundary.
      const disagreements: string[] = [];
      let nearBoundary = 0;
      for (const kind of ['mandates', 'verify'] as const) {
        const byRound = new Map<number, Answer[]>();
        for (const a of answers)
          if (kindOf.get(a.target) === kind) byRound.set(a.round, [...(byRound.get(a.round) ?? []), a]);
        for (const [round, pair] of byRound) {
          if (new Set(pair.map((a) => a.outcome)).size === 1) continue;
          const from = Math.min(...pair.map((a) => a.sentAt));
          const to = Math.max(...pair.map((a) => a.readAt));
          if (allowed(kind, from, to).size > 1) nearBoundary++;
          else
            disagreements.push(
              `round ${round} (${relative(from)} ms): ${pair.map((a) => `${a.target} ${a.outcome}`).join(', ')}`,
            );
        }
      }

      // When each process's answer changed, relative to the boundary (ms; the first request with the new answer).
      const flips = Object.fromEntries(
        targets.map((t) => {
          const own = answers.filter((a) => a.target === label(t));
          const first = (outcome: string) => own.find((a) => a.outcome === outcome)?.sentAt;
          const valid = t.kind === 'verify' ? first('OK') : undefined;
          const expired = first(t.kind === 'verify' ? 'MANDATE_EXPIRED' : 'EXPIRED');
          return [
            label(t),
            {
              ...(valid !== undefined ? { valid_ms: Math.round(valid - validFrom) } : {}),
              expired_ms: expired === undefined ? null : Math.round(expired - expiresAt),
            },
          ];
        }),
      );

      // Expiry persisted by one of the two sweepers and announced once; give both time to try again.
      const expiredEvents = () =>
        storedEvents(stack.services.audit.url, stack.internalSecret, tenantId, 'MANDATE_EXPIRED').then(
          (all) => all.filter((e) => e.resource?.id === mandateId),
        );
      await eventually(
        async () => ((await expiredEvents()).length > 0 ? true : undefined),
        30_000,
        'MANDATE_EXPIRED',
      );
      await sleep(3_000);
      const announced = await expiredEvents();

      produced.done = 1;
      await expectStoredOnce(
        { url: stack.services.audit.url, internalSecret: stack.internalSecret },
        { tenantId, produced, count: 1 },
        ['MANDATE_CREATED', 'VERIFICATION_PERFORMED'] satisfies CountedType[],
        'clock skew ±5 s, one mandate asked of 2 mandates and 2 verify processes every 100 ms',
        { rounds: answers.length / targets.length, near_boundary_disagreements: nearBoundary },
      );
      process.stdout.write(
        `[fault] clock skew: bound ${slack.toFixed(0)} ms; first answer after each boundary (ms) ${JSON.stringify(flips)}; ` +
          `MANDATE_EXPIRED stored ${announced.length}x at expires_at${signed(Date.parse(announced[0]!.occurred_at) - expiresAt)} ms\n`,
      );

      expect(answers.filter((a) => a.status !== 200).map((a) => `${a.target}: ${a.status}`)).toEqual([]);
      expect(offTime).toEqual([]);
      expect(disagreements).toEqual([]);
      // Every process saw every stage: the window was asked through, not skipped.
      expect(Object.values(flips).map((f) => f.expired_ms !== null)).toEqual(targets.map(() => true));
      expect(announced.length).toBe(1);
      // Persisted no earlier than expires_at on the decision clock.
      expect(Date.parse(announced[0]!.occurred_at)).toBeGreaterThanOrEqual(expiresAt - slack);
    }, 180_000);

    it('when a mandate is created on mandates processes 5 s ahead and 5 s behind, then expires_at 2 s ahead is taken by both and 2 s past is refused by both', async () => {
      const created = await createTenant(stack, { name: 'clock-skew-create', plan: 'enterprise' });
      const token = await tokenFor(created.tenant.id, 'mandates');
      const mandates = targets.filter((t) => t.kind === 'mandates');
      const create = async (t: (typeof targets)[number], inMs: number) => {
        const res = await fetch(`${t.proc.url}/v1/mandates`, {
          method: 'POST',
          headers: { 'x-internal-token': token, 'content-type': 'application/json' },
          body: JSON.stringify({
            principal: 'user_skew',
            delegate: 'agent_skew',
            expires_at: new Date(clock.now().getTime() + inMs).toISOString(),
          }),
        });
        await res.arrayBuffer();
        return `${label(t)} expires_at ${signed(inMs)} ms: ${res.status}`;
      };
      const answers = await Promise.all(mandates.flatMap((t) => [create(t, 2_000), create(t, -2_000)]));
      expect(answers).toEqual(
        mandates.flatMap((t) => [
          `${label(t)} expires_at +2000 ms: 201`,
          `${label(t)} expires_at -2000 ms: 400`,
        ]),
      );
    }, 30_000);
  },
);

const signed = (n: number) => `${n >= 0 ? '+' : ''}${Math.round(n)}`;
