import { internalTokens } from '@mandate/shared';
import { apiClient } from '../support/stack';

export const COUNTED_TYPES = ['MANDATE_CREATED', 'VERIFICATION_PERFORMED', 'API_CALL'] as const;
export type CountedType = (typeof COUNTED_TYPES)[number];

/** What the clients saw succeed, by event type: the request ids that must each show up exactly once. */
export class Produced {
  readonly byType: Record<CountedType, Set<string>> = {
    MANDATE_CREATED: new Set(),
    VERIFICATION_PERFORMED: new Set(),
    API_CALL: new Set(),
  };
  readonly statuses = new Map<number, number>();
  readonly clientErrors: string[] = [];
  done = 0;
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

/**
 * Reads the tenant's events of the counted types from the audit service's GET /v1/events
 * (called directly with an internal token, so that reading does not add API_CALL events),
 * every page, and compares them with what the clients saw succeed.
 */
export async function countEvents(
  auditUrl: string,
  internalSecret: string,
  tenantId: string,
  produced: Produced,
): Promise<Counts[]> {
  const tokens = internalTokens(internalSecret);
  const result: Counts[] = [];
  for (const type of COUNTED_TYPES) {
    const seen = new Map<string, number>();
    const ids = new Set<string>();
    let idRepeats = 0;
    let cursor: string | undefined;
    do {
      const token = await tokens.mint(
        {
          tenantId,
          actor: { type: 'system' },
          permissions: ['events:read'],
          requestId: 'fault-test-count',
        },
        'audit',
      );
      const qs = new URLSearchParams({ type, limit: '100', ...(cursor ? { cursor } : {}) });
      const res = await fetch(`${auditUrl}/v1/events?${qs}`, { headers: { 'x-internal-token': token } });
      if (res.status !== 200) throw new Error(`GET /v1/events answered ${res.status}: ${await res.text()}`);
      const page = (await res.json()) as {
        data: { id: string; request_id: string | null }[];
        next_cursor: string | null;
        has_more: boolean;
      };
      for (const e of page.data) {
        if (ids.has(e.id)) idRepeats++;
        ids.add(e.id);
        const rid = e.request_id ?? '(none)';
        seen.set(rid, (seen.get(rid) ?? 0) + 1);
      }
      cursor = page.has_more && page.next_cursor ? page.next_cursor : undefined;
    } while (cursor);
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
