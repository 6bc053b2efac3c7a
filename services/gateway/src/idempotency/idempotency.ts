import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, conflict, serviceUnavailable } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import type { RouteRule } from '@mandate/shared/contract';
import { header, type Principal } from '../auth/authenticate';
import { clientIp } from '../limits/subject';
import type { IdempotencyRecord, IdempotencyStore, PendingLock, StoredResponse } from './store';

export const IDEMPOTENCY_HEADER = 'idempotency-key';

/** What the gateway knows of the request beyond node's IncomingMessage. */
export interface IdempotentCall {
  /** The canonical /v1 path of the matched route. */
  path: string;
  /** The raw body, if any. */
  body?: Buffer;
  requestId: string;
  /** Member names never stored with the answer (secretMembersOf the route); absent = the defaults. */
  secrets?: ReadonlySet<string>;
  /**
   * false: the key is checked but nothing is stored or replayed, the call runs (a route that hands a
   * capability to callers without credentials, docs/API.md#idempotency).
   */
  replay?: false;
}
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** 1–255 printable ASCII characters (UUIDs, ULIDs, base64url…); node has already trimmed the ends. */
const VALID_KEY = /^[\x20-\x7e]{1,255}$/;
/** The headers of a stored response worth replaying; request ids and rate-limit headers belong to each call. */
const STORED_HEADERS = ['content-type', 'location', 'cache-control'];

export const KEY_IN_PROGRESS = 'A request with this Idempotency-Key is in progress';
export const KEY_REUSED = 'This Idempotency-Key was already used with a different request';
export const INVALID_KEY = 'Idempotency-Key must be 1 to 255 printable ASCII characters';

export interface IdempotencySettings {
  /** How long a response is kept (docs/API.md, "Idempotency": 24 h). */
  ttlMs: number;
  /** How long a duplicate waits for the first request in flight before 409. */
  waitMs: number;
  /**
   * The first request's lock is a lease: it lives `leaseMs` and its gateway renews it every quarter
   * of that while the request runs, so a slow request keeps it however long it takes, and a
   * gateway that died mid-request lets it go within `leaseMs` (docs/DECISIONS.md#idempotency).
   */
  leaseMs: number;
  /** How long a request may keep renewing: past any request's upstream bounds, so a leak ends too. */
  holdMaxMs: number;
  trustProxy: boolean;
}

export const DEFAULT_IDEMPOTENCY_SETTINGS: IdempotencySettings = {
  ttlMs: 24 * 60 * 60 * 1000,
  waitMs: 10_000,
  leaseMs: 6_000,
  holdMaxMs: 60_000,
  trustProxy: false,
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/**
 * docs/API.md, "Idempotency" on the gateway, for every POST that carries an Idempotency-Key, after authentication and
 * rate limiting and before forwarding. The first request takes a lock on (scope, key) and runs;
 * its answer is stored when it finishes; retries with the same request replay it, and duplicates
 * that arrive while it runs wait for it.
 */
export class Idempotency {
  private readonly settings: IdempotencySettings;

  constructor(
    readonly store: IdempotencyStore,
    private readonly logger: Logger,
    settings: Partial<IdempotencySettings> = {},
  ) {
    this.settings = { ...DEFAULT_IDEMPOTENCY_SETTINGS, ...settings };
  }

  /**
   * Returns true when it has answered the request (a replay); false when the request should be
   * forwarded (no key, not a POST, or this request holds the lock — its answer is then captured).
   * Throws 400 (bad key), 409 (key reused with another request, or still in progress) and 503
   * (store unreachable: executing without the guarantee could run a retry twice).
   * `call.path` is the canonical /v1 path of the matched route; `call.body` the raw body.
   */
  async apply(
    req: IncomingMessage,
    res: ServerResponse,
    call: IdempotentCall,
    principal: Principal | null,
  ): Promise<boolean> {
    const key = req.headers[IDEMPOTENCY_HEADER];
    if (req.method !== 'POST' || key === undefined) return false;
    if (typeof key !== 'string' || !VALID_KEY.test(key)) throw badRequest(INVALID_KEY);
    if (call.replay === false) return false;

    const scope = this.scopeOf(req, principal);
    const pending: PendingLock = { fingerprint: fingerprint(req, call), token: randomUUID() };
    const deadline = Date.now() + this.settings.waitMs;
    for (let attempt = 0; ; attempt++) {
      let existing: IdempotencyRecord | null;
      try {
        existing = await this.store.acquire(scope, key, pending, this.settings.leaseMs);
      } catch (err) {
        this.logger.error({ err, requestId: call.requestId }, 'idempotency store unavailable');
        throw serviceUnavailable('Idempotency store unavailable; retry later');
      }
      if (existing === null) {
        this.capture(call, res, scope, key, pending);
        return false;
      }
      if (existing.fingerprint !== pending.fingerprint) throw conflict(KEY_REUSED);
      if (existing.state === 'done') {
        replay(res, existing.response);
        return true;
      }
      // The first request is still running: wait for its answer (or for its lock to go, after a 5xx).
      const left = deadline - Date.now();
      if (left <= 0) throw conflict(KEY_IN_PROGRESS);
      await sleep(Math.min(5 * 2 ** Math.min(attempt, 4), 50, left));
    }
  }

  /**
   * Per caller (docs/API.md, "Idempotency"): an API key, or a JWT subject in one tenant; the operator has its own
   * scope, public routes (onboarding) one per client IP. Another caller's identical key is another
   * record, so a replay never hands one caller what another caller was answered.
   */
  private scopeOf(req: IncomingMessage, principal: Principal | null): string {
    if (principal?.tenantId) {
      const { key_id, subject_id } = principal.actor;
      return key_id ? `${principal.tenantId}:key:${key_id}` : `${principal.tenantId}:sub:${subject_id ?? ''}`;
    }
    if (principal) return 'platform';
    return `ip:${clientIp(req.socket.remoteAddress, header(req, 'x-forwarded-for'), this.settings.trustProxy)}`;
  }

  /**
   * Stores the answer this request ends with, however it ends (the upstream's response or an error
   * envelope), by watching res.end; a 5xx releases the lock instead. A client that hangs up early
   * changes nothing: the forward still ends the response, so the work the service did is stored
   * for the retry that will follow. The answer leaves only once the record is written (one bounded
   * store call), so a client that got an answer and retries always gets the replay.
   */
  private capture(
    call: IdempotentCall,
    res: ServerResponse,
    scope: string,
    key: string,
    pending: PendingLock,
  ) {
    const { requestId, secrets = DEFAULT_SECRETS } = call;
    let settled = false;
    const end = res.end;
    const { store, settings, logger } = this;
    const onFail = (err: unknown) => logger.error({ err, requestId }, 'idempotency record not written');
    const stopRenewing = this.keepLease(scope, key, pending, requestId);
    res.end = function (this: ServerResponse, chunk?: unknown, encoding?: unknown, cb?: unknown) {
      if (settled) return end.call(this, chunk as never, encoding as never, cb as never);
      settled = true;
      stopRenewing();
      const status = res.statusCode;
      const sent = typeof chunk === 'function' || chunk == null ? Buffer.alloc(0) : toBuffer(chunk, encoding);
      // A secret is shown once (docs/API.md, "Authentication"; docs/API.md, "Hardening"): never kept, so a replay comes without it.
      const body = withoutSecrets(sent, secrets);
      const write =
        status >= 500
          ? store.release(scope, key, pending)
          : store.complete(scope, key, pending, stored(res, status, body), settings.ttlMs);
      write.catch(onFail).finally(() => end.call(this, chunk as never, encoding as never, cb as never));
      return this;
    } as ServerResponse['end'];
  }

  /** Renews the lock every quarter lease until the request ends (the returned stop) or holdMaxMs. */
  private keepLease(scope: string, key: string, pending: PendingLock, requestId: string): () => void {
    const { store, settings, logger } = this;
    const until = Date.now() + settings.holdMaxMs;
    const timer = setInterval(() => {
      if (Date.now() >= until) return clearInterval(timer);
      // A renewal lost to a Redis blip is retried at the next tick; only a lease of silence lets go.
      store
        .renew(scope, key, pending, settings.leaseMs)
        .catch((err: unknown) => logger.warn({ err, requestId }, 'idempotency lock not renewed'));
    }, settings.leaseMs / 4);
    timer.unref();
    return () => clearInterval(timer);
  }
}

/**
 * What makes two requests "the same": method, canonical route path (aliases and a trailing slash
 * folded), query string, content type and the SHA-256 of the raw body.
 */
function fingerprint(req: IncomingMessage, { path, body = Buffer.alloc(0) }: IdempotentCall): string {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  const canonical = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return sha256(
    [req.method, canonical, q >= 0 ? url.slice(q) : '', header(req, 'content-type') ?? '', sha256(body)].join(
      '\n',
    ),
  );
}

/**
 * Member names that hold a secret in any answer (API key and webhook secrets, the sign-in
 * poll_token and access_token): whatever a route's contract says, an idempotent replay never
 * carries them (docs/API.md, "Hardening"), so a new route cannot forget the rule for these.
 */
const SECRET_MEMBER_NAMES = ['api_key', 'secret', 'poll_token', 'access_token'] as const;

const secretMembersByRule = new WeakMap<RouteRule, ReadonlySet<string>>();

/** The member names kept out of a route's stored idempotent answers: the defaults and its own. */
export function secretMembersOf(rule: Pick<RouteRule, 'secrets'>): ReadonlySet<string> {
  let names = secretMembersByRule.get(rule as RouteRule);
  if (!names) {
    names = new Set([...SECRET_MEMBER_NAMES, ...(rule.secrets ?? [])]);
    secretMembersByRule.set(rule as RouteRule, names);
  }
  return names;
}

const DEFAULT_SECRETS: ReadonlySet<string> = new Set(SECRET_MEMBER_NAMES);

/**
 * The body without its secrets: every member named in `secrets` whose value is not an object
 * (`api_key` of the key-creation shape `{key_id, api_key, …}`, `poll_token`, `access_token`, a
 * webhook's `secret`), at any depth. A member of that name holding an object is kept and walked
 * into: the tenant-creation shape `{tenant, api_key: {key_id, api_key, …}}` keeps its key's id.
 * A body naming none of them, or not JSON, is returned as it is (most are not even parsed).
 */
export function withoutSecrets(body: Buffer, secrets: ReadonlySet<string>): Buffer {
  let named = false;
  for (const name of secrets) if ((named = body.includes(`"${name}"`))) break;
  if (!named) return body;
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  const dropped = { count: 0 };
  const stripped = stripSecrets(json, secrets, dropped);
  // Nothing dropped (the name was only a value): the bytes the client got, unchanged.
  return dropped.count === 0 ? body : Buffer.from(JSON.stringify(stripped));
}

function stripSecrets(value: unknown, secrets: ReadonlySet<string>, dropped: { count: number }): unknown {
  if (Array.isArray(value)) return value.map((item) => stripSecrets(item, secrets, dropped));
  if (!isObject(value)) return value;
  // No prototype: a member named __proto__ stays a member, as JSON.parse made it.
  const out: Record<string, unknown> = Object.create(null);
  for (const [name, member] of Object.entries(value)) {
    if (secrets.has(name) && (typeof member !== 'object' || member === null)) {
      dropped.count++;
      continue;
    }
    out[name] = stripSecrets(member, secrets, dropped);
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function toBuffer(chunk: unknown, encoding: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk);
  return Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
}

function stored(res: ServerResponse, status: number, body: Buffer): StoredResponse {
  const headers: Record<string, string> = {};
  for (const name of STORED_HEADERS) {
    const value = res.getHeader(name);
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return { status, headers, body: body.toString('base64') };
}

function replay(res: ServerResponse, response: StoredResponse) {
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  res.setHeader(REPLAYED_HEADER, 'true');
  res.statusCode = response.status;
  res.end(Buffer.from(response.body, 'base64'));
}
