import { internalTokens } from '@mandate/shared/core';
import { apiClient } from '../support/stack';

export const COUNTED_TYPES = ['MANDATE_CREATED', 'VERIFICATION_PERFORMED', 'API_CALL'] as const;
/** Every type a workload may count; COUNTED_TYPES are the ones createAndVerify produces. */
export type CountedType = (typeof COUNTED_TYPES)[number] | 'MANDATE_REVOKED' | 'API_KEY_CREATED';

/** What the clients saw succeed, by event type: the request ids that must each show up exactly once. */
export class Produced {
  readonly byType: Record<CountedType, Set<string>> = {
    MANDATE_CREATED: new Set(),
    VERIFICATION_PERFORMED: new Set(),
    API_CALL: new Set(),
    MANDATE_REVOKED: new Set(),
    API_KEY_CREATED: new Set(),
  };
  readonly statuses = new Map<number, number>();
  readonly clientErrors: string[] = [];
  /** Every 5xx answer: which request, which route, what it said (a 500 is then traced in the services' logs). */
  readonly serverErrors: { id: string; path: string; status: number; body: unknown }[] = [];
  /** The status-list slot of every mandate whose revocation answered (its list must say 1, INVALID). */
  readonly revokedSlots: StatusSlot[] = [];
  done = 0;
}

/** A mandate's place in its status list, as signed into it (docs/DECISIONS.md, "Status lists (v3)"). */
export interface StatusSlot {
  idx: number;
  uri: string;
}

/**
 * `count` mandates, each created then verified, by `concurrency` workers through the gateway.
 * Every request carries its own X-Request-Id, which the gateway hands to the service and the
 * service puts into its event, so each expected event is known exactly (not just counted).
 */
export async function createAndVerify(
  gatewayUrl: string,
  auth: string,
  options: { count: number; concurrency: number; label: string; produced: Produced },
): Promise<void> {
  const api = apiClient(gatewayUrl);
  const { produced, label } = options;
  let next = 0;
  const call = async (rid: string, path: string, body: unknown) => {
    try {
      const res = await api('POST', path, { auth, body, headers: { 'x-request-id': rid } });
      produced.statuses.set(res.status, (produced.statuses.get(res.status) ?? 0) + 1);
      if (res.status >= 500)
        produced.serverErrors.push({ id: rid, path, status: res.status, body: res.body });
      // Every authenticated call is audited whatever its status (docs/DECISIONS.md).
      if (res.status !== 401) produced.byType.API_CALL.add(rid);
      return res;
    } catch (err) {
      produced.clientErrors.push(`${rid}: ${String(err)}`);
      return undefined;
    }
  };
  const worker = async () => {
    for (let i = next++; i < options.count; i = next++) {
      const createRid = `${label}-c-${i}`;
      const created = await call(createRid, '/v1/mandates', {
        principal: { id: `user_${i}`, type: 'person' },
        delegate: { id: `agent_${i}`, type: 'agent' },
        scope: { actions: ['payments:*'], constraints: { max_amount: 50_000, currency: 'EUR' } },
      });
      if (created?.status === 201) produced.byType.MANDATE_CREATED.add(createRid);
      if (created?.status !== 201) continue;
      const verifyRid = `${label}-v-${i}`;
      const verified = await call(verifyRid, '/v1/verify', {
        mandate_id: created.body.id,
        action: 'payments:create',
        amount: 1_200,
        currency: 'EUR',
      });
      if (verified?.status === 200) produced.byType.VERIFICATION_PERFORMED.add(verifyRid);
      produced.done++;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
}

export interface Counts {
  type: CountedType;
  produced: number;
  stored: number;
  missing: number;
  duplicates: number;
}

/** An event as audit's GET /v1/events lists it: the fields the fault tests look at. */
export interface StoredEvent {
  id: string;
  request_id: string | null;
  occurred_at: string;
  resource: { type: string; id: string } | null;
}

/**
 * The tenant's stored events of `type`, every page, read from the audit service's GET /v1/events
 * directly with an internal token (so that reading does not add API_CALL events).
 */
export async function storedEvents(
  auditUrl: string,
  internalSecret: string,
  tenantId: string,
  type: string,
): Promise<StoredEvent[]> {
  const tokens = internalTokens(internalSecret);
  const found: StoredEvent[] = [];
  let cursor: string | undefined;
  do {
    const token = await tokens.mint(
      { tenantId, actor: { type: 'system' }, permissions: ['events:read'], requestId: 'fault-test-read' },
      'audit',
    );
    const qs = new URLSearchParams({ type, limit: '100', ...(cursor ? { cursor } : {}) });
    const res = await fetch(`${auditUrl}/v1/events?${qs}`, { headers: { 'x-internal-token': token } });
    if (res.status !== 200) throw new Error(`GET /v1/events answered ${res.status}: ${await res.text()}`);
    const page = (await res.json()) as { data: StoredEvent[]; next_cursor: string | null; has_more: boolean };
    found.push(...page.data);
    cursor = page.has_more && page.next_cursor ? page.next_cursor : undefined;
  } while (cursor);
  return found;
}

/**
 * Reads the tenant's events of the counted types (storedEvents) and compares them with what the
 * clients saw succeed.
 */
export async function countEvents(
  auditUrl: string,
  internalSecret: string,
  tenantId: string,
  produced: Produced,
  types: readonly CountedType[] = COUNTED_TYPES,
): Promise<Counts[]> {
  const result: Counts[] = [];
  for (const type of types) {
    const seen = new Map<string, number>();
    const ids = new Set<string>();
    let idRepeats = 0;
    for (const e of await storedEvents(auditUrl, internalSecret, tenantId, type)) {
      if (ids.has(e.id)) idRepeats++;
      ids.add(e.id);
      const rid = e.request_id ?? '(none)';
      seen.set(rid, (seen.get(rid) ?? 0) + 1);
    }
    const expected = produced.byType[type];
    let stored = 0;
    let duplicates = idRepeats;
    for (const [rid, n] of seen) {
      if (expected.has(rid)) stored++;
      // The same request recorded twice under two event ids would be a doubled event.
      duplicates += n - 1;
    }
    result.push({ type, produced: expected.size, stored, missing: expected.size - stored, duplicates });
  }
  return result;
}

/** Polls the counts until nothing is missing (or the deadline), then returns the last counts. */
export async function settle(read: () => Promise<Counts[]>, timeoutMs: number): Promise<Counts[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = await read();
    if (counts.every((c) => c.missing === 0) || Date.now() > deadline) return counts;
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

export function report(scenario: string, counts: Counts[], extra: Record<string, unknown> = {}): string {
  const lines = counts.map(
    (c) =>
      `  ${c.type.padEnd(22)} produced=${c.produced}, stored=${c.stored}, missing=${c.missing}, duplicates=${c.duplicates}`,
  );
  const text = `[fault] ${scenario} ${JSON.stringify(extra)}\n${lines.join('\n')}`;
  // Printed on purpose: the issue asks for the counts in the test output.
  process.stdout.write(`${text}\n`);
  return text;
}

/**
 * Like createAndVerify, but for a producer that is killed and restarted under it: a step that
 * fails (no answer, or not its 2xx) is tried again under a new request id (`…-a1`, `…-a2`) after a
 * short pause, until `count` mandates are created, verified and (with `revoke`) revoked, or the
 * deadline passes. A failed attempt's events may or may not be stored (the producer may have
 * committed before it died); they are not expected, but one stored twice is still a duplicate.
 */
export async function createVerifyRevokeRetrying(
  gatewayUrl: string,
  auth: string,
  options: {
    count: number;
    concurrency: number;
    label: string;
    produced: Produced;
    revoke?: boolean;
    deadlineMs: number;
    /** Called as each mandate is through, right after its last answer was read (a fault can land then). */
    onDone?: () => void;
  },
): Promise<void> {
  const api = apiClient(gatewayUrl);
  const { produced, label } = options;
  const deadline = Date.now() + options.deadlineMs;
  let next = 0;
  /**
   * One step until it answers `expected` (the answer's body) or, on a retry, `doneBefore` (an
   * earlier attempt did it, unseen: a revoke's 409); undefined past the deadline.
   */
  const step = async (
    rid: string,
    path: string,
    body: unknown,
    expected: number,
    type: CountedType,
    doneBefore?: number,
  ) => {
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      const id = attempt === 0 ? rid : `${rid}-a${attempt}`;
      try {
        const res = await api('POST', path, { auth, body, headers: { 'x-request-id': id } });
        produced.statuses.set(res.status, (produced.statuses.get(res.status) ?? 0) + 1);
        if (res.status >= 500) produced.serverErrors.push({ id, path, status: res.status, body: res.body });
        // An answer the client read: the gateway audited the call, whatever its status.
        if (res.status !== 401) produced.byType.API_CALL.add(id);
        if (res.status === expected) {
          produced.byType[type].add(id);
          return res.body as { id?: string; status?: { status_list: StatusSlot } };
        }
        if (attempt > 0 && res.status === doneBefore) return {};
      } catch (err) {
        produced.clientErrors.push(`${id}: ${String(err)}`);
      }
      // A back-off while the producer restarts, not a synchronisation: the loop retries until its deadline.
      await new Promise((r) => setTimeout(r, 100));
    }
    return undefined;
  };
  const worker = async () => {
    for (let i = next++; i < options.count; i = next++) {
      const created = await step(
        `${label}-c-${i}`,
        '/v1/mandates',
        {
          principal: { id: `user_${i}`, type: 'person' },
          delegate: { id: `agent_${i}`, type: 'agent' },
          scope: { actions: ['payments:*'], constraints: { max_amount: 50_000, currency: 'EUR' } },
        },
        201,
        'MANDATE_CREATED',
      );
      if (!created?.id) return;
      const verify = { mandate_id: created.id, action: 'payments:create', amount: 1_200, currency: 'EUR' };
      if (!(await step(`${label}-v-${i}`, '/v1/verify', verify, 200, 'VERIFICATION_PERFORMED'))) return;
      if (options.revoke) {
        const path = `/v1/mandates/${created.id}/revoke`;
        const revoked = await step(
          `${label}-r-${i}`,
          path,
          { reason: 'fault test' },
          200,
          'MANDATE_REVOKED',
          409,
        );
        if (!revoked) return;
        if (created.status) produced.revokedSlots.push(created.status.status_list);
      }
      produced.done++;
      options.onDone?.();
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
}
