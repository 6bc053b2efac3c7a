import { calculateJwkThumbprint, compactVerify, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import {
  EVIDENCE_BUNDLE_MEMBERS,
  MANDATE_SIGNED_FIELDS,
  evidenceDigestOf,
  mandateSigningPayload,
} from '@mandate/shared/browser';
import {
  AUDIT_CHECKPOINT_TYP,
  checkpointPayload,
  checkpointProblem,
  consistencyProblem,
  firstFailingEvent,
  logProofProblem,
  type Checkpoint,
  type ConsistencyProofFile,
} from './log-proof';

/** The JWS `typ` of a bundle signature (the mandate's own signature carries none). */
export const EVIDENCE_JWS_TYP = 'mandate-evidence+jws';

export type CheckName =
  | 'duplicate members'
  | 'top-level members'
  | 'key ids'
  | 'digest'
  | 'bundle signature'
  | 'mandate signature'
  | 'pinned keys'
  | 'log checkpoint'
  | 'log proofs'
  | 'log consistency';

export interface CheckResult {
  check: CheckName;
  ok: boolean;
  detail: string;
}

export interface VerifyOptions {
  /**
   * Keys trusted out of band (the service's published JWKS, saved earlier). Only with them can a
   * bundle be "verified": every key the bundle uses must be one of them. Without them every check
   * still runs, but the bundle's own keys prove nothing (anyone can make a key and sign).
   */
  trustedKeys?: JWK[];
  /** A checkpoint of the tenant's log kept earlier (docs/API.md#proving-the-log): the bundle's must extend it. */
  keptCheckpoint?: unknown;
  /** The consistency proof between the kept checkpoint's size and the bundle's (GET /v1/audit/consistency-proof). */
  consistency?: ConsistencyProofFile;
}

/** The bundle is not shaped like an evidence export at all (as opposed to failing a check). */
export class BundleFormatError extends Error {}

interface Bundle {
  mandate: Record<string, unknown> & { signature: { kid: string; jws: string } };
  exported_at: string;
  events: unknown[];
  evidence_exports: number;
  keys: JWK[];
  digest: string;
  signature: string;
  checkpoint?: unknown;
  log_proof?: unknown;
  proofs?: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function asBundle(input: unknown): Bundle {
  const need = (ok: boolean, what: string) => {
    if (!ok) throw new BundleFormatError(`not an evidence bundle: ${what}`);
  };
  need(isObject(input), 'expected a JSON object');
  const b = input as Record<string, unknown>;
  need(isObject(b.mandate), 'mandate must be an object');
  const m = b.mandate as Record<string, unknown>;
  need(isObject(m.signature), 'mandate.signature must be an object');
  const sig = m.signature as Record<string, unknown>;
  need(typeof sig.jws === 'string' && typeof sig.kid === 'string', 'mandate.signature needs kid and jws');
  for (const field of MANDATE_SIGNED_FIELDS) need(field in m, `mandate.${field} is missing`);
  need(Array.isArray(b.events), 'events must be an array');
  need(
    typeof b.evidence_exports === 'number' &&
      Number.isSafeInteger(b.evidence_exports) &&
      b.evidence_exports >= 0,
    'evidence_exports must be a non-negative integer',
  );
  need(Array.isArray(b.keys) && b.keys.every(isObject), 'keys must be an array of JWKs');
  need(typeof b.exported_at === 'string', 'exported_at must be a string');
  need(typeof b.digest === 'string', 'digest must be a string');
  need(typeof b.signature === 'string', 'signature must be a compact JWS string');
  return b as unknown as Bundle;
}

/**
 * The first member name that appears twice in one object of this (valid) JSON text, with where:
 * JSON.parse silently keeps the last one, so a bundle could show a checker one value and a reader
 * another. Names are compared decoded ("\u0061" and "a" are the same name).
 */
export function findDuplicateMember(text: string): string | undefined {
  const stack: ({ names: Set<string>; expectName: boolean } | null)[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top?.expectName) {
        const name = JSON.parse(text.slice(i, end + 1)) as string;
        if (top.names.has(name)) return name;
        top.names.add(name);
        top.expectName = false;
      }
      i = end;
    } else if (c === '{') stack.push({ names: new Set(), expectName: true });
    else if (c === '[') stack.push(null);
    else if (c === '}' || c === ']') stack.pop();
    else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top) top.expectName = true;
    }
  }
  return undefined;
}

/** Parses a bundle file's text (BundleFormatError if it is not JSON) and runs every check, duplicate members included. */
export async function verifyBundleText(text: string, options: VerifyOptions = {}): Promise<CheckResult[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new BundleFormatError(`not JSON: ${(err as Error).message}`);
  }
  const duplicate = findDuplicateMember(text);
  const results = await verifyBundle(parsed, options);
  results.unshift(
    duplicate === undefined
      ? { check: 'duplicate members', ok: true, detail: 'no member name appears twice in one object' }
      : {
          check: 'duplicate members',
          ok: false,
          detail: `member ${JSON.stringify(duplicate)} appears twice in one object (a reader could see either value)`,
        },
  );
  return results;
}

/**
 * Runs the checks on a parsed bundle: its top-level members, each key's kid against its RFC 7638
 * thumbprint, the digest, the bundle's signature over it, the mandate's signature over its immutable
 * fields, and, given trusted keys, that every key used is pinned. Every check runs and reports, so
 * a tampered bundle says everything that is wrong with it.
 */
export async function verifyBundle(input: unknown, options: VerifyOptions = {}): Promise<CheckResult[]> {
  const bundle = asBundle(input);
  const results: CheckResult[] = [];

  results.push(checkMembers(bundle), await checkKids(bundle));

  const recomputed = evidenceDigestOf(bundle);
  results.push(
    recomputed === bundle.digest
      ? {
          check: 'digest',
          ok: true,
          detail: `sha256 ${recomputed} covers the mandate, exported_at, ${bundle.events.length} event(s) and ${bundle.evidence_exports} earlier export(s)`,
        }
      : {
          check: 'digest',
          ok: false,
          detail: `the bundle states ${bundle.digest} but its contents hash to ${recomputed}`,
        },
  );

  results.push(
    await checkJws('bundle signature', bundle.signature, bundle, (header, payload) => {
      if (header.typ !== EVIDENCE_JWS_TYP)
        return `typ is ${String(header.typ)}, expected ${EVIDENCE_JWS_TYP}`;
      if (payload !== bundle.digest) return 'it signs another digest than the one the bundle states';
      return undefined;
    }),
  );

  const expectedPayload = mandateSigningPayload(bundle.mandate);
  results.push(
    await checkJws('mandate signature', bundle.mandate.signature.jws, bundle, (header, payload) => {
      if (header.kid !== bundle.mandate.signature.kid)
        return `the JWS kid ${String(header.kid)} differs from mandate.signature.kid`;
      if (header.typ !== undefined) return `unexpected typ ${String(header.typ)} on a mandate signature`;
      if (payload !== expectedPayload)
        return "it signs other values than the mandate's immutable fields (id, tenant_id, principal, delegate, scope, valid_from, expires_at, created_at)";
      return undefined;
    }),
  );

  results.push(...(await checkLog(bundle, options)));
  if (options.trustedKeys) results.push(await checkPinned(bundle, options.trustedKeys));
  return results;
}

/** Only the members a bundle holds: an unknown one is reported, never ignored. */
function checkMembers(bundle: Bundle): CheckResult {
  const allowed = new Set<string>(EVIDENCE_BUNDLE_MEMBERS);
  const unknown = Object.keys(bundle).filter((k) => !allowed.has(k));
  return unknown.length === 0
    ? { check: 'top-level members', ok: true, detail: EVIDENCE_BUNDLE_MEMBERS.join(', ') }
    : {
        check: 'top-level members',
        ok: false,
        detail: `unknown member(s) ${unknown.map((k) => JSON.stringify(k)).join(', ')}; a bundle holds only ${EVIDENCE_BUNDLE_MEMBERS.join(', ')}`,
      };
}

/** Every key's kid is its RFC 7638 thumbprint. */
async function checkKids(bundle: Bundle): Promise<CheckResult> {
  const badKids: string[] = [];
  for (const key of bundle.keys) {
    const thumbprint = await thumbprintOf(key);
    if (thumbprint === undefined || key.kid !== thumbprint) badKids.push(String(key.kid));
  }
  return badKids.length === 0
    ? {
        check: 'key ids',
        ok: true,
        detail: `every key's kid is its RFC 7638 thumbprint (${bundle.keys.length})`,
      }
    : {
        check: 'key ids',
        ok: false,
        detail: `kid ${badKids.join(', ')} is not the RFC 7638 thumbprint of its key`,
      };
}

/** Whether the bundle carries the log's proofs (a bundle exported before the log carries none). */
export function hasLogProof(bundle: unknown): boolean {
  return isObject(bundle) && ('checkpoint' in bundle || 'log_proof' in bundle || 'proofs' in bundle);
}

/**
 * docs/API.md#proving-the-log: the checkpoint's signature, every event's inclusion in its tree,
 * and given a kept checkpoint, consistency with it. A bundle without any of it says so and passes
 * (it was exported before the log), unless the auditor asked for consistency.
 */
async function checkLog(bundle: Bundle, options: VerifyOptions): Promise<CheckResult[]> {
  if (!hasLogProof(bundle)) {
    const absent: CheckResult = {
      check: 'log proofs',
      ok: true,
      detail:
        'no log proof present (a bundle exported before the tamper-evident log): the events are not proven against a checkpoint',
    };
    if (options.keptCheckpoint === undefined) return [absent];
    return [
      {
        ...absent,
        ok: false,
        detail: 'no log proof present, so nothing can be checked against the kept checkpoint',
      },
    ];
  }
  const results: CheckResult[] = [];
  const shape = checkpointProblem(bundle.checkpoint);
  if (shape) return [{ check: 'log checkpoint', ok: false, detail: `the bundle's checkpoint: ${shape}` }];
  const cp = bundle.checkpoint as Checkpoint;
  const tenant = (bundle.mandate as { tenant_id?: unknown }).tenant_id;
  const signed = await checkJws('log checkpoint', cp.jws, bundle, (header, payload) =>
    checkpointJwsProblem(header, payload, cp),
  );
  results.push(
    signed.ok && cp.tenant_id !== tenant
      ? {
          check: 'log checkpoint',
          ok: false,
          detail: `the checkpoint is of tenant ${cp.tenant_id}, not the mandate's`,
        }
      : signed.ok
        ? { ...signed, detail: `${signed.detail}; tree_size ${cp.tree_size}, root ${cp.root_hash}` }
        : signed,
  );
  results.push(eventsProven(bundle, cp));
  if (options.keptCheckpoint !== undefined) results.push(await checkKept(bundle, cp, options));
  return results;
}

/**
 * Every event is in the checkpoint's tree: by the bundle's joint proof (`log_proof`), or in a
 * bundle exported before it, by each event's inclusion path (`proofs`).
 */
function eventsProven(bundle: Bundle, cp: Checkpoint): CheckResult {
  const joint = 'log_proof' in bundle;
  const failing = joint
    ? logProofProblem(bundle.events, bundle.log_proof, cp)
    : Array.isArray(bundle.proofs)
      ? firstFailingEvent(bundle.events, bundle.proofs, cp)
      : 'proofs' in bundle
        ? 'proofs must be an array, one entry per event'
        : 'the bundle has a checkpoint but no log_proof to prove its events with';
  if (failing) return { check: 'log proofs', ok: false, detail: failing };
  const how = joint ? 'one RFC 9162 multiproof' : 'RFC 9162 inclusion, a path per event';
  return {
    check: 'log proofs',
    ok: true,
    detail: `every event (${bundle.events.length}) is in the log of the checkpoint (${how})`,
  };
}

function checkpointJwsProblem(
  header: Record<string, unknown>,
  payload: string,
  cp: Checkpoint,
): string | undefined {
  if (header.typ !== AUDIT_CHECKPOINT_TYP)
    return `typ is ${String(header.typ)}, expected ${AUDIT_CHECKPOINT_TYP}`;
  if (payload !== checkpointPayload(cp))
    return 'it signs other claims than the checkpoint states (tenant_id, tree_size, root_hash, issued_at)';
  return undefined;
}

async function checkKept(bundle: Bundle, cp: Checkpoint, options: VerifyOptions): Promise<CheckResult> {
  const fail = (detail: string): CheckResult => ({ check: 'log consistency', ok: false, detail });
  const shape = checkpointProblem(options.keptCheckpoint);
  if (shape) return fail(`the kept checkpoint: ${shape}`);
  const kept = options.keptCheckpoint as Checkpoint;
  // The kept checkpoint may be signed by a key since retired: the pinned keys count too.
  const keys = { ...bundle, keys: [...bundle.keys, ...(options.trustedKeys ?? [])] };
  const signed = await checkJws('log consistency', kept.jws, keys, (header, payload) =>
    checkpointJwsProblem(header, payload, kept),
  );
  if (!signed.ok) return fail(`the kept checkpoint (size ${kept.tree_size}): ${signed.detail}`);
  const problem = consistencyProblem(kept, cp, options.consistency);
  return problem
    ? fail(problem)
    : {
        check: 'log consistency',
        ok: true,
        detail: `the bundle's log (size ${cp.tree_size}) extends the kept checkpoint (size ${kept.tree_size})`,
      };
}

async function thumbprintOf(key: JWK): Promise<string | undefined> {
  try {
    return await calculateJwkThumbprint(key, 'sha256');
  } catch {
    return undefined;
  }
}

/** The kids the two signatures name (undefined when a JWS cannot be read; its own check says so). */
function usedKids(bundle: Bundle): (string | undefined)[] {
  const kidOf = (jws: string) => {
    try {
      const { kid } = decodeProtectedHeader(jws);
      return typeof kid === 'string' ? kid : undefined;
    } catch {
      return undefined;
    }
  };
  const checkpointJws = isObject(bundle.checkpoint) ? bundle.checkpoint.jws : undefined;
  return [
    kidOf(bundle.signature),
    kidOf(bundle.mandate.signature.jws),
    ...(typeof checkpointJws === 'string' ? [kidOf(checkpointJws)] : []),
  ];
}

/** Every key a signature uses must be a pinned key: the same RFC 7638 thumbprint, i.e. the same public key. */
async function checkPinned(bundle: Bundle, trusted: JWK[]): Promise<CheckResult> {
  const pinned = new Set<string>();
  for (const key of trusted) {
    const thumbprint = await thumbprintOf(key);
    if (thumbprint !== undefined && key.kid === thumbprint) pinned.add(thumbprint);
  }
  const missing: string[] = [];
  for (const kid of usedKids(bundle)) {
    const key = bundle.keys.find((k) => k.kid === kid);
    const thumbprint = key ? await thumbprintOf(key) : undefined;
    if (kid === undefined || thumbprint !== kid || !pinned.has(thumbprint)) missing.push(String(kid));
  }
  return missing.length === 0
    ? {
        check: 'pinned keys',
        ok: true,
        detail: `every key used is in the pinned JWKS (${pinned.size} key(s))`,
      }
    : {
        check: 'pinned keys',
        ok: false,
        detail: `key ${[...new Set(missing)].join(', ')} is not among the pinned keys`,
      };
}

async function checkJws(
  check: CheckName,
  jws: string,
  bundle: Bundle,
  inspect: (header: Record<string, unknown>, payload: string) => string | undefined,
): Promise<CheckResult> {
  const fail = (why: string): CheckResult => ({ check, ok: false, detail: why });
  let header: Record<string, unknown>;
  try {
    header = decodeProtectedHeader(jws) as Record<string, unknown>;
  } catch {
    return fail('not a compact JWS');
  }
  if (header.alg !== 'ES256') return fail(`alg is ${String(header.alg)}, expected ES256`);
  const kid = typeof header.kid === 'string' ? header.kid : undefined;
  if (!kid) return fail('the JWS header names no kid');
  const jwk = bundle.keys.find((k) => k.kid === kid);
  if (!jwk) return fail(`key ${kid} is not in the bundle's keys`);
  let payload: string;
  try {
    const key = await importJWK({ ...jwk, alg: 'ES256' }, 'ES256');
    const verified = await compactVerify(jws, key, { algorithms: ['ES256'] });
    payload = new TextDecoder().decode(verified.payload);
  } catch (err) {
    return fail(`the signature does not verify with key ${kid} (${(err as Error).message})`);
  }
  const problem = inspect(header, payload);
  return problem ? fail(problem) : { check, ok: true, detail: `ES256, key ${kid}` };
}
