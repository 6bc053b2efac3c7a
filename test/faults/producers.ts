import { inflateSync } from 'node:zlib';
import { eventually } from '../support/eventually';
import { apiClient, startService, type ServiceName, type ServiceProcess } from '../support/stack';
import { Produced, countEvents, report, settle, type Counts, type CountedType } from './workload';

/**
 * What the producer fault tests share: a SIGKILL and a restart on the same port, with the same
 * environment (so the same database, spool directory and AMQP namespace), and the accounting.
 */

/** docs/TESTING.md, "Fault matrix": every fault's service is whole again within 10 s of the fault's end. */
export const WHOLE_WITHIN_MS = 10_000;

/**
 * PLAN_OVERRIDES for the gateway: the enterprise plan with limits no fault load reaches (global
 * and the named endpoints), so a fault test measures the fault, never a 429.
 */
export function noLimits(...endpoints: string[]): string {
  const open = { rate: 100_000, burst: 100_000 };
  return JSON.stringify({
    enterprise: {
      monthly_quota: 100_000_000,
      global: open,
      endpoints: Object.fromEntries(endpoints.map((name) => [name, open])),
    },
  });
}

const PROBE_MANDATE = {
  principal: { id: 'user_whole', type: 'person' },
  delegate: { id: 'agent_whole', type: 'agent' },
  scope: { actions: ['payments:*'], constraints: { max_amount: 50_000, currency: 'EUR' } },
};
const PROBE_TYPES: CountedType[] = ['MANDATE_CREATED', 'VERIFICATION_PERFORMED', 'API_CALL'];

/** When a probe passed, in ms from the fault's end: its calls answered, then their events stored. */
export interface Whole {
  answeredMs: number;
  storedMs: number;
}

/**
 * Whole again: a create and its verify through `gatewayUrl` answered 201 and 200, and their events
 * (MANDATE_CREATED, VERIFICATION_PERFORMED, both API_CALLs) stored by audit. Tried from `since` on
 * with the probe tenant's own calls, for at most 60 s. The events queue behind any backlog the
 * fault left (first in, first out), so a fault of the event path bounds `storedMs` by its own
 * length too (docs/DECISIONS.md#recovery).
 */
export async function wholeAgain(
  gatewayUrl: string,
  audit: { url: string; internalSecret: string },
  probe: { tenantId: string; auth: string },
  since: number,
  label: string,
): Promise<Whole> {
  const api = apiClient(gatewayUrl);
  const deadline = since + 60_000;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  for (let attempt = 0; ; attempt++) {
    const [c, v] = [`${label}-whole-${attempt}-c`, `${label}-whole-${attempt}-v`];
    const created = await api('POST', '/v1/mandates', {
      auth: probe.auth,
      body: PROBE_MANDATE,
      headers: { 'x-request-id': c },
    }).catch(() => undefined);
    const verified =
      created?.status === 201
        ? await api('POST', '/v1/verify', {
            auth: probe.auth,
            body: { mandate_id: created.body.id, action: 'payments:create', amount: 1, currency: 'EUR' },
            headers: { 'x-request-id': v },
          }).catch(() => undefined)
        : undefined;
    if (verified?.status === 200) {
      const answeredMs = Date.now() - since;
      const owed = new Produced();
      owed.byType.MANDATE_CREATED.add(c);
      owed.byType.VERIFICATION_PERFORMED.add(v);
      owed.byType.API_CALL.add(c).add(v);
      while (Date.now() < deadline) {
        const counts = await countEvents(audit.url, audit.internalSecret, probe.tenantId, owed, PROBE_TYPES);
        if (counts.every((n) => n.missing === 0)) return { answeredMs, storedMs: Date.now() - since };
        await sleep(200);
      }
    }
    if (Date.now() > deadline)
      throw new Error(`not whole 60 s after ${label}: ${created?.status} ${verified?.status}`);
    // A back-off while the service comes back, not a synchronisation: the probe is retried.
    await sleep(100);
  }
}

/** `url` with its host and port replaced: a client of `url` sent through a proxy on `port`. */
export const withPort = (url: string, port: number) => {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString().replace(/\/$/, '');
};

/** Polls `check` until it holds; throws past the deadline. */
export async function waitFor(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Kills `proc` with SIGKILL (no shutdown hook runs) and resolves once it has exited. */
export async function sigkill(proc: ServiceProcess): Promise<void> {
  proc.child.kill('SIGKILL');
  await proc.exited;
}

/** Starts `name` again with the environment `killed` had (its port too), and waits until it is healthy. */
export const restart = (name: ServiceName, killed: ServiceProcess) =>
  startService(name, killed.env, `${killed.name} (restarted)`);

/**
 * Reads what audit stored of the tenant's events (once nothing is missing, at most 30 s), prints
 * it under `title`, and requires every event the clients saw succeed stored exactly once, with no
 * event doubled, and every one of the `count` mandates through the whole load.
 */
export async function expectStoredOnce(
  audit: { url: string; internalSecret: string },
  run: { tenantId: string; produced: Produced; count: number },
  types: readonly CountedType[],
  title: string,
  extra: Record<string, number>,
): Promise<Counts[]> {
  const counts = await settle(
    () => countEvents(audit.url, audit.internalSecret, run.tenantId, run.produced, types),
    30_000,
  );
  report(title, counts, {
    ...extra,
    attempts_not_answered: run.produced.clientErrors.length,
    statuses: Object.fromEntries(run.produced.statuses),
  });
  expect(run.produced.done).toBe(run.count);
  for (const c of counts)
    expect({ type: c.type, stored: c.stored, duplicates: c.duplicates }).toEqual({
      type: c.type,
      stored: c.produced,
      duplicates: 0,
    });
  return counts;
}

/** The default STATUS_LIST_TTL_SECONDS: a lifecycle change must be in every list fetched after it. */
const STATUS_LIST_TTL_MS = 60_000;

/**
 * Every mandate the load revoked reads 1 (INVALID) in its status list, fetched through the gateway
 * and decoded with node:zlib in the draft's bit order, within the list's ttl: the state the
 * clients saw answered reaches the list across the producer's fault. Resolves with the count.
 */
export async function expectRevokedInTheirLists(gatewayUrl: string, produced: Produced): Promise<number> {
  const byList = new Map<string, number[]>();
  for (const { uri, idx } of produced.revokedSlots) {
    const path = new URL(uri).pathname;
    byList.set(path, [...(byList.get(path) ?? []), idx]);
  }
  const notYetInvalid = async () => {
    const wrong: string[] = [];
    for (const [path, indexes] of byList) {
      const res = await fetch(`${gatewayUrl}${path}`);
      if (res.status !== 200) return [`${path}: ${res.status}`];
      const claims = JSON.parse(Buffer.from((await res.text()).split('.')[1]!, 'base64url').toString()) as {
        status_list: { lst: string };
      };
      const bytes = inflateSync(Buffer.from(claims.status_list.lst, 'base64url'));
      for (const idx of indexes)
        if (((bytes[idx >> 2]! >> ((idx & 3) * 2)) & 3) !== 1) wrong.push(`${path}#${idx}`);
    }
    return wrong;
  };
  const wrong = await eventually(
    async () => ((await notYetInvalid()).length === 0 ? [] : undefined),
    STATUS_LIST_TTL_MS,
    'every revoked mandate INVALID in its status list',
  ).catch(async () => notYetInvalid());
  expect(wrong).toEqual([]);
  return produced.revokedSlots.length;
}
