import { inflateSync } from 'node:zlib';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from 'jose';
import {
  ASSURANCE_LEVELS,
  RequestInvalid,
  checkRequest,
  firstFailure,
  type DecisionInput,
  type DecisionMandate,
  type DecisionState,
  type DenyReason,
} from './decide';

export { DENY_REASONS, type DenyReason, type DecisionInput } from './decide';
export { RequestInvalid } from './decide';

/**
 * Offline verification of a mandate (docs/DECISIONS.md, "Status lists (v3)"): its JWS checked against the service's JWKS, its state
 * read from its signed status list, and the decision taken by the same module as POST /v1/verify.
 * Anything in doubt throws an OfflineVerificationError: it never answers ALLOW on a doubt.
 */
export class OfflineVerificationError extends Error {
  constructor(
    readonly code:
      | 'MANDATE_SIGNATURE_INVALID'
      | 'NO_STATUS_CLAIM'
      | 'STATUS_LIST_INVALID'
      | 'STATUS_LIST_EXPIRED'
      | 'STATUS_LIST_STALE'
      | 'STATUS_LIST_SUBJECT_MISMATCH'
      | 'STATUS_LIST_UNAVAILABLE'
      | 'REQUEST_INVALID'
      | 'MANDATE_TENANT_MISMATCH'
      | 'MANDATE_PRINCIPAL_MISMATCH',
    message: string,
    /** With REQUEST_INVALID: the request member refused, as the online 400 names it. */
    readonly field?: string,
  ) {
    super(message);
    this.name = 'OfflineVerificationError';
  }
}

export interface OfflineDecision {
  decision: 'ALLOW' | 'DENY';
  reason: 'OK' | DenyReason;
  /**
   * Present for a mandate with a budget: what is spent is known online only (POST
   * /v1/mandates/{id}/authorizations holds it), so every other check is decided and this one is not.
   */
  budget?: 'unchecked';
}

/** The request as for POST /v1/verify, without mandate_id (the JWS names the mandate). */
export type OfflineRequest = DecisionInput;

/** What `OfflineVerifier.verify` takes: the mandate's JWS, the request, and who the relying party is. */
export interface VerifyInput {
  jws: string;
  request: OfflineRequest;
  /** The relying party's own tenant: a mandate of any other tenant throws MANDATE_TENANT_MISMATCH. */
  tenant_id: string;
  /** The principal the relying party expects, when it knows one: another throws MANDATE_PRINCIPAL_MISMATCH. */
  principal_id?: string;
  statusList?: string;
  now?: Date;
}

type Fetch = (
  url: string,
  init?: { headers?: Record<string, string> },
) => Promise<{
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
  json(): Promise<unknown>;
}>;

interface SignedMandate extends DecisionMandate {
  id: string;
  tenant_id?: unknown;
  principal?: DecisionMandate['principal'] & { id?: unknown };
  expires_at?: string | null;
  status?: { status_list?: { idx?: unknown; uri?: unknown } };
}

interface VerifiedList {
  sub: string;
  exp: number;
  /** Issued at (s) and the list's own ttl (s): a list older than ttl is stale. */
  iat: number;
  ttl: number;
  bytes: Uint8Array;
}

const STATUS_VALID = 0;
const STATUS_INVALID = 1;
const STATUS_SUSPENDED = 2;
/** Clock skew allowed between the service that signed a list and this verifier. */
const STALENESS_SKEW_SECONDS = 5;
/** Verified JWS are kept by their text: a signature is checked once, a decision costs a lookup. */
const MAX_CACHED = 10_000;

function remember<V>(map: Map<string, V>, key: string, value: V): V {
  if (map.size >= MAX_CACHED) map.delete(map.keys().next().value!);
  map.set(key, value);
  return value;
}

/** Seconds of a response's Cache-Control max-age; 0 when it names none. */
const maxAgeOf = (res: { headers: { get(name: string): string | null } }) =>
  Number(/max-age=(\d+)/.exec(res.headers.get('cache-control') ?? '')?.[1] ?? 0);

/**
 * Holds the JWKS, verified mandates and lists. `jwks` given → those keys; else `jwksUri` is fetched,
 * kept for its Cache-Control max-age, then revalidated (If-None-Match when it had an ETag), and
 * refetched at once when a kid is unknown. A key set that changed drops every verified mandate and
 * list, so a key the service withdrew stops verifying within the JWKS max-age. Lists are fetched
 * from each mandate's `uri`, kept `ttl` seconds, then revalidated with If-None-Match.
 */
export class OfflineVerifier {
  private keys: ReturnType<typeof createLocalJWKSet> | undefined;
  /** With `jwksUri`: the key set as fetched, its ETag, and until when (ms) it is used unasked. */
  private keysFetched: { text: string; etag: string | null; until: number } | undefined;
  private readonly mandates = new Map<string, SignedMandate>();
  private readonly lists = new Map<string, VerifiedList>();
  private readonly fetched = new Map<string, { token: string; etag: string | null; until: number }>();

  constructor(private readonly options: { jwks?: JSONWebKeySet; jwksUri?: string; fetch?: Fetch } = {}) {
    if (options.jwks) this.keys = createLocalJWKSet(options.jwks);
  }

  private get fetcher(): Fetch {
    return this.options.fetch ?? (globalThis.fetch as unknown as Fetch);
  }

  /** Whether the key set must be asked for again before it is used at `now` (ms). */
  private keysStale(now: number): boolean {
    return this.options.jwksUri !== undefined && (this.keysFetched?.until ?? 0) <= now;
  }

  private async keySet(now: number, refresh = false) {
    if (this.keys && !refresh && !this.keysStale(now)) return this.keys;
    if (!this.options.jwksUri) {
      if (this.keys) return this.keys;
      throw new OfflineVerificationError('MANDATE_SIGNATURE_INVALID', 'no JWKS to check signatures with');
    }
    const previous = this.keysFetched;
    const res = await this.fetcher(this.options.jwksUri, {
      headers: previous?.etag && this.keys ? { 'If-None-Match': previous.etag } : {},
    }).catch((err: Error) => {
      throw new OfflineVerificationError('STATUS_LIST_UNAVAILABLE', `JWKS fetch failed: ${err.message}`);
    });
    const until = now + maxAgeOf(res) * 1000;
    if (res.status === 304 && previous && this.keys) {
      this.keysFetched = { ...previous, until };
      return this.keys;
    }
    if (res.status !== 200)
      throw new OfflineVerificationError('STATUS_LIST_UNAVAILABLE', `JWKS answered ${res.status}`);
    const text = await res.text();
    if (text !== previous?.text) {
      this.keys = createLocalJWKSet(JSON.parse(text) as JSONWebKeySet);
      // What was verified with the old set is verified again with the new one, if asked.
      this.mandates.clear();
      this.lists.clear();
    }
    this.keysFetched = { text, etag: res.headers.get('etag'), until };
    return this.keys!;
  }

  private async verifyJws(jws: string, now: number): Promise<Uint8Array> {
    try {
      return (await compactVerify(jws, await this.keySet(now), { algorithms: ['ES256'] })).payload;
    } catch (err) {
      // A kid we do not know yet may be a rotated key: one refetch of the JWKS, then give up.
      if (this.options.jwksUri && (err as { code?: string }).code === 'ERR_JWKS_NO_MATCHING_KEY') {
        return (await compactVerify(jws, await this.keySet(now, true), { algorithms: ['ES256'] })).payload;
      }
      throw err;
    }
  }

  /** The mandate's signed fields, once its JWS verified. */
  async mandate(jws: string, now: Date = new Date()): Promise<SignedMandate> {
    const known = this.mandates.get(jws);
    if (known) return known;
    let parsed: SignedMandate;
    try {
      if (decodeProtectedHeader(jws).typ !== undefined) throw new Error('a mandate JWS has no typ');
      parsed = JSON.parse(
        new TextDecoder().decode(await this.verifyJws(jws, now.getTime())),
      ) as SignedMandate;
    } catch (err) {
      throw new OfflineVerificationError(
        'MANDATE_SIGNATURE_INVALID',
        `mandate JWS refused: ${(err as Error).message}`,
      );
    }
    if (!parsed || typeof parsed !== 'object' || typeof parsed.delegate?.id !== 'string' || !parsed.scope)
      throw new OfflineVerificationError('MANDATE_SIGNATURE_INVALID', 'mandate payload is not a mandate');
    return remember(this.mandates, jws, parsed);
  }

  /** A statuslist+jwt checked: signature, typ, sub (the uri it was fetched for), exp. */
  async list(token: string, uri: string, now: Date): Promise<VerifiedList> {
    let list = this.lists.get(token);
    if (!list) {
      let claims: {
        sub?: unknown;
        exp?: unknown;
        iat?: unknown;
        ttl?: unknown;
        status_list?: { bits?: unknown; lst?: unknown };
      };
      try {
        if (decodeProtectedHeader(token).typ !== 'statuslist+jwt')
          throw new Error('typ is not statuslist+jwt');
        claims = JSON.parse(new TextDecoder().decode(await this.verifyJws(token, now.getTime())));
        if (claims.status_list?.bits !== 2 || typeof claims.status_list.lst !== 'string')
          throw new Error('status_list must have bits 2 and lst');
        if (
          typeof claims.sub !== 'string' ||
          typeof claims.exp !== 'number' ||
          typeof claims.iat !== 'number' ||
          typeof claims.ttl !== 'number'
        )
          throw new Error('sub, iat, exp and ttl are required');
        list = {
          sub: claims.sub,
          exp: claims.exp,
          iat: claims.iat,
          ttl: claims.ttl,
          bytes: inflateSync(Buffer.from(claims.status_list.lst, 'base64url')),
        };
      } catch (err) {
        throw new OfflineVerificationError(
          'STATUS_LIST_INVALID',
          `status list refused: ${(err as Error).message}`,
        );
      }
      remember(this.lists, token, list);
    }
    if (list.sub !== uri)
      throw new OfflineVerificationError(
        'STATUS_LIST_SUBJECT_MISMATCH',
        `the list is for ${list.sub}, not ${uri}`,
      );
    if (list.exp * 1000 <= now.getTime())
      throw new OfflineVerificationError('STATUS_LIST_EXPIRED', 'the status list has expired');
    // Staleness at most ttl (docs/VERIFY-AT-THE-EDGE.md#online-or-offline), whatever its exp says.
    if ((list.iat + list.ttl + STALENESS_SKEW_SECONDS) * 1000 < now.getTime())
      throw new OfflineVerificationError(
        'STATUS_LIST_STALE',
        `the status list is older than its ttl (${list.ttl} s)`,
      );
    return list;
  }

  /** The list at `uri`, verified; one kept in the cache that went stale or expired is fetched again, once. */
  private async fetchedList(uri: string, now: Date): Promise<VerifiedList> {
    try {
      return await this.list(await this.fetchList(uri, now), uri, now);
    } catch (err) {
      const code = (err as OfflineVerificationError).code;
      if (!this.fetched.has(uri) || (code !== 'STATUS_LIST_STALE' && code !== 'STATUS_LIST_EXPIRED'))
        throw err;
      this.fetched.delete(uri);
      return this.list(await this.fetchList(uri, now), uri, now);
    }
  }

  /** The list at `uri`: cached for its Cache-Control max-age, then revalidated (If-None-Match → 304). */
  async fetchList(uri: string, now: Date): Promise<string> {
    const cached = this.fetched.get(uri);
    if (cached && cached.until > now.getTime()) return cached.token;
    const res = await this.fetcher(uri, {
      headers: cached?.etag ? { 'If-None-Match': cached.etag } : {},
    }).catch((err: Error) => {
      throw new OfflineVerificationError(
        'STATUS_LIST_UNAVAILABLE',
        `status list fetch failed: ${err.message}`,
      );
    });
    const maxAge = maxAgeOf(res);
    let token: string;
    if (res.status === 304 && cached) token = cached.token;
    else if (res.status === 200) token = await res.text();
    else throw new OfflineVerificationError('STATUS_LIST_UNAVAILABLE', `status list answered ${res.status}`);
    this.fetched.set(uri, { token, etag: res.headers.get('etag'), until: now.getTime() + maxAge * 1000 });
    return token;
  }

  /**
   * The decision for `request` against the mandate signed as `jws`; `statusList` given → that token,
   * else fetched. `tenant_id` is the relying party's own tenant (and `principal_id`, when given, the
   * principal it expects): a mandate of another tenant or principal throws, as online verify
   * answers another tenant's mandate 404 (docs/VERIFY-AT-THE-EDGE.md#what-the-verifier-refuses).
   */
  async verify(input: VerifyInput): Promise<OfflineDecision> {
    const now = input.now ?? new Date();
    // Validated by the rules of POST /v1/verify's request (one module): what online answers 400 throws here.
    try {
      checkRequest(input.request, ASSURANCE_LEVELS);
    } catch (err) {
      if (!(err instanceof RequestInvalid)) throw err;
      throw new OfflineVerificationError('REQUEST_INVALID', err.message, err.field);
    }
    // A key set past its max-age is asked for again first: a changed one drops what it verified.
    if (this.keysStale(now.getTime())) await this.keySet(now.getTime());
    const mandate = await this.mandate(input.jws, now);
    if (typeof input.tenant_id !== 'string' || mandate.tenant_id !== input.tenant_id)
      throw new OfflineVerificationError(
        'MANDATE_TENANT_MISMATCH',
        `the mandate is not one of tenant ${String(input.tenant_id)}`,
      );
    if (input.principal_id !== undefined && mandate.principal?.id !== input.principal_id)
      throw new OfflineVerificationError(
        'MANDATE_PRINCIPAL_MISMATCH',
        `the mandate's principal is not ${input.principal_id}`,
      );
    const ref = mandate.status?.status_list;
    if (!ref || typeof ref.uri !== 'string' || !Number.isSafeInteger(ref.idx) || (ref.idx as number) < 0)
      throw new OfflineVerificationError(
        'NO_STATUS_CLAIM',
        'this mandate was signed without a status list: verify it online (POST /v1/verify)',
      );
    const idx = ref.idx as number;
    const list = input.statusList
      ? await this.list(input.statusList, ref.uri, now)
      : await this.fetchedList(ref.uri, now);
    if (idx >> 2 >= list.bytes.length)
      throw new OfflineVerificationError('STATUS_LIST_INVALID', 'the mandate index is outside the list');
    const status = (list.bytes[idx >> 2]! >> ((idx & 3) * 2)) & 0b11;
    const state = stateOf(status, mandate, now);
    const failure = firstFailure(mandate, state, input.request, now);
    const budget = mandate.scope?.budget != null ? { budget: 'unchecked' as const } : {};
    return { decision: failure ? 'DENY' : 'ALLOW', reason: failure ?? 'OK', ...budget };
  }
}

/** List value → state; past expires_at it reads EXPIRED, as the service's effective state does. */
function stateOf(status: number, mandate: SignedMandate, now: Date): DecisionState {
  if (mandate.expires_at != null && Date.parse(mandate.expires_at) <= now.getTime()) return 'EXPIRED';
  if (status === STATUS_VALID) return 'ACTIVE';
  if (status === STATUS_SUSPENDED) return 'SUSPENDED';
  if (status === STATUS_INVALID) return 'REVOKED';
  throw new OfflineVerificationError('STATUS_LIST_INVALID', `unknown status value ${status}`);
}

const verifiers = new WeakMap<object, OfflineVerifier>();

/**
 * One-shot form (docs/DECISIONS.md, "Status lists (v3)"): `jwks` is the JWK set (GET /v1/.well-known/jwks.json); `statusList` a list
 * already fetched, else it is fetched with `fetch` (default: global fetch). Verifications are cached
 * per `jwks` object, so reusing the same object makes repeated decisions cheap.
 */
export async function verifyOffline(
  options: VerifyInput & { jwks: JSONWebKeySet; fetch?: Fetch },
): Promise<OfflineDecision> {
  let verifier = verifiers.get(options.jwks);
  if (!verifier) {
    verifier = new OfflineVerifier({ jwks: options.jwks, fetch: options.fetch });
    verifiers.set(options.jwks, verifier);
  }
  return verifier.verify(options);
}
