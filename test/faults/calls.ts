import { type CountedType, type Produced } from './workload';

/**
 * The load of the fault matrix's rows that record every answer (docs/TESTING.md, "Fault matrix"):
 * each request as the client saw it, with when it was sent and when it ended, so a test can say
 * which answers fell in the fault and which after, and that every 5xx was a 503 with Retry-After.
 */

/** A request still unanswered after this is a hang (the gateway's hops give up after 10 s). */
export const CLIENT_TIMEOUT_MS = 30_000;

/** One request as the client saw it. */
export interface Call {
  rid: string;
  path: string;
  sentAt: number;
  endedAt: number;
  status?: number;
  retryAfter?: string | null;
  replayed?: boolean;
  body?: any;
  /** The error envelope's message, if any. */
  message?: string;
  /** No answer: a reset, a refused connection, a timeout. */
  error?: string;
}

/** Sends `body` (none for a GET) to the gateway as `auth`, records the call in `calls`, and never throws. */
export async function send(
  gatewayUrl: string,
  auth: string,
  method: 'GET' | 'POST',
  path: string,
  rid: string,
  body: unknown,
  calls: Call[],
  headers: Record<string, string> = {},
): Promise<Call> {
  const call: Call = { rid, path, sentAt: Date.now(), endedAt: 0 };
  try {
    const res = await fetch(gatewayUrl + path, {
      method,
      headers: {
        authorization: `Bearer ${auth}`,
        'x-request-id': rid,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
    });
    const text = await res.text();
    call.status = res.status;
    call.retryAfter = res.headers.get('retry-after');
    call.replayed = res.headers.get('idempotent-replayed') === 'true';
    call.body = text ? JSON.parse(text) : undefined;
    call.message = typeof call.body?.message === 'string' ? call.body.message : undefined;
  } catch (err) {
    call.error =
      err instanceof Error
        ? `${err.message} ${String((err as { cause?: unknown }).cause ?? '')}`
        : String(err);
  }
  call.endedAt = Date.now();
  calls.push(call);
  return call;
}

/** POSTs `body` to the gateway as `auth`, records the call in `calls`, and never throws. */
export const post = (
  gatewayUrl: string,
  auth: string,
  path: string,
  rid: string,
  body: unknown,
  calls: Call[],
  headers: Record<string, string> = {},
) => send(gatewayUrl, auth, 'POST', path, rid, body, calls, headers);

export const mandateBody = (i: number, label: string) => ({
  principal: { id: `user_${label}_${i}`, type: 'person' },
  delegate: { id: `agent_${i}`, type: 'agent' },
  scope: { actions: ['payments:*'], constraints: { max_amount: 50_000, currency: 'EUR' } },
});

/**
 * The gateway's answer while it cannot reach identity to check a key it has not cached (its
 * credential cache keeps an answer KEY_CACHE_TTL_MS, 0.5 s, docs/DECISIONS.md, "Credential changes").
 */
export const IDENTITY_DOWN = 'Identity service unavailable';

/**
 * Every authenticated call the client read an answer to is audited, whatever its status
 * (docs/API.md, "Audit of every call"); a 401, and a 503 because identity could not say who the
 * caller is, have no caller to audit.
 */
export const audited = (call: Call) =>
  call.status !== undefined &&
  call.status !== 401 &&
  !(call.status === 503 && call.message === IDENTITY_DOWN);

/** The 5xx answers among `calls`, as {status, retry-after}: each must be 503 with Retry-After. */
export const serverErrors = (calls: Call[]) =>
  calls
    .filter((c) => (c.status ?? 0) >= 500)
    .map((c) => ({ rid: c.rid, status: c.status, retryAfter: c.retryAfter }));

/**
 * One step of a load until it answers `expected`: sent again under a new request id (`…-a1`, …)
 * after a short back-off while it fails. What answered its 2xx goes into `produced` (its event is
 * owed), every call into `calls`. Resolves with the answer's body.
 */
export async function stepUntil(
  gatewayUrl: string,
  auth: string,
  produced: Produced,
  calls: Call[],
  step: { rid: string; path: string; body: unknown; expected: number; type: CountedType },
  /** True once the test file is over (its stack stopped): the step gives up, resolving undefined. */
  abandoned: () => boolean = () => false,
): Promise<any> {
  for (let attempt = 0; !abandoned(); attempt++) {
    const id = attempt === 0 ? step.rid : `${step.rid}-a${attempt}`;
    const call = await post(gatewayUrl, auth, step.path, id, step.body, calls);
    if (call.status !== undefined) {
      produced.statuses.set(call.status, (produced.statuses.get(call.status) ?? 0) + 1);
      if (audited(call)) produced.byType.API_CALL.add(id);
    } else produced.clientErrors.push(`${id}: ${call.error}`);
    if (call.status === step.expected) {
      produced.byType[step.type].add(id);
      return call.body;
    }
    // A back-off while the fault lasts, not a synchronisation: the step is retried until it succeeds.
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}

/**
 * Mandates created then verified through the gateway by `concurrency` workers until `stop()` says
 * so (then each worker finishes the mandate it is on). A failed step is tried again under a new
 * request id after a short back-off, until it answers or `abandoned()` (the file is over, after a
 * failed test); what answered its 2xx goes into `produced`, every call into `calls`. Resolves once
 * every worker has stopped.
 */
export function runLoad(
  gatewayUrl: string,
  auth: string,
  label: string,
  produced: Produced,
  calls: Call[],
  stop: () => boolean,
  concurrency = 8,
  abandoned: () => boolean = () => false,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (!stop()) {
      const i = next++;
      const created = (await stepUntil(
        gatewayUrl,
        auth,
        produced,
        calls,
        {
          rid: `${label}-c-${i}`,
          path: '/v1/mandates',
          body: mandateBody(i, label),
          expected: 201,
          type: 'MANDATE_CREATED',
        },
        abandoned,
      )) as { id: string } | undefined;
      if (!created) return;
      const verified = await stepUntil(
        gatewayUrl,
        auth,
        produced,
        calls,
        {
          rid: `${label}-v-${i}`,
          path: '/v1/verify',
          body: { mandate_id: created.id, action: 'payments:create', amount: 1_200, currency: 'EUR' },
          expected: 200,
          type: 'VERIFICATION_PERFORMED',
        },
        abandoned,
      );
      if (verified === undefined) return;
      produced.done++;
    }
  };
  return Promise.all(Array.from({ length: concurrency }, worker)).then(() => undefined);
}
