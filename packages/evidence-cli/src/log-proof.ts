import {
  canonicalJson,
  AUDIT_CHECKPOINT_TYP,
  equalBytes,
  MerkleHasher,
  auditLeafBytes,
  fromBase64Url,
  sha256,
  type CheckpointClaims,
} from '@mandate/shared/browser';

// The plain-TypeScript SHA-256, so the dashboard runs this very checker in the browser.
const merkleHasher = new MerkleHasher(sha256);

/**
 * The tamper-evident log's checks (docs/API.md#proving-the-log): the bundle's checkpoint is a JWS
 * (ES256, typ audit-checkpoint+jwt) over its four claims, of the mandate's tenant; every listed
 * event, hashed as SHA-256(0x00 || RFC 8785 JSON of the event), is leaf seq-1 of that tree, by the
 * bundle's joint proof (`log_proof`) or, in older bundles, each event's RFC 9162 inclusion path
 * (`proofs`); and, given a checkpoint the auditor kept, the two trees are consistent.
 */

export interface Checkpoint extends CheckpointClaims {
  jws: string;
}

export interface ConsistencyProofFile {
  from: number;
  to: number;
  path: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The checkpoint's shape (not its signature); a message when it is not one. */
export function checkpointProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'not an object';
  if (typeof value.tenant_id !== 'string') return 'tenant_id must be a string';
  if (!Number.isSafeInteger(value.tree_size) || (value.tree_size as number) < 1)
    return 'tree_size must be a positive integer';
  const root = typeof value.root_hash === 'string' ? fromBase64Url(value.root_hash) : undefined;
  if (root?.length !== 32) return 'root_hash must be 32 bytes in base64url';
  if (typeof value.issued_at !== 'string') return 'issued_at must be a string';
  if (typeof value.jws !== 'string') return 'jws must be a compact JWS';
  return undefined;
}

/** What the JWS must sign: the canonical JSON of exactly the four claims. */
export function checkpointPayload(cp: CheckpointClaims): string {
  return canonicalJson({
    tenant_id: cp.tenant_id,
    tree_size: cp.tree_size,
    root_hash: cp.root_hash,
    issued_at: cp.issued_at,
  });
}

export { AUDIT_CHECKPOINT_TYP };

const eventName = (event: unknown, i: number) =>
  `event ${isObject(event) ? String(event.id) : `#${i}`} (position ${i + 1})`;

/**
 * Each event's seq, or why the event cannot be in the checkpoint's tree: not an object, no seq
 * (stored before the log), a seq another event has, or one past the tree.
 */
function eventSeqs(events: readonly unknown[], checkpoint: Checkpoint): number[] | string {
  const seqs: number[] = [];
  const seen = new Set<number>();
  for (let i = 0; i < events.length; i++) {
    const event = events[i];
    const name = eventName(event, i);
    if (!isObject(event)) return `${name} is not an object`;
    const seq = event.seq;
    if (!Number.isSafeInteger(seq) || (seq as number) < 1)
      return `${name} has no seq: it is not in the log (stored outside it, or before the backfill)`;
    if (seen.has(seq as number))
      return `${name} has seq ${String(seq)}, which another event of the bundle has`;
    seen.add(seq as number);
    if ((seq as number) > checkpoint.tree_size)
      return `${name} has seq ${String(seq)}, outside the checkpoint's tree of size ${checkpoint.tree_size}`;
    seqs.push(seq as number);
  }
  return seqs;
}

const notLeaf = (name: string, seq: number) =>
  `${name} (seq ${seq}) is not leaf ${seq} of the log the checkpoint signs: it was altered, moved or never logged`;

/**
 * The bundle's `proofs` (bundles exported before `log_proof`): the first event whose own RFC 9162
 * inclusion path fails, named, or undefined when all hold. `proofs` is aligned with `events`.
 */
export function firstFailingEvent(
  events: readonly unknown[],
  proofs: readonly unknown[],
  checkpoint: Checkpoint,
): string | undefined {
  if (proofs.length !== events.length)
    return `the bundle has ${events.length} event(s) but ${proofs.length} proof(s)`;
  const seqs = eventSeqs(events, checkpoint);
  if (typeof seqs === 'string') return seqs;
  const root = fromBase64Url(checkpoint.root_hash)!;
  for (let i = 0; i < events.length; i++) {
    const [proof, seq, name] = [proofs[i], seqs[i]!, eventName(events[i], i)];
    if (!isObject(proof)) return `${name} (seq ${seq}) has no inclusion proof`;
    if (proof.seq !== seq) return `${name} has seq ${seq} but its proof is for seq ${String(proof.seq)}`;
    const path = Array.isArray(proof.path)
      ? proof.path.map((p) => (typeof p === 'string' ? fromBase64Url(p) : undefined))
      : undefined;
    if (!path || path.some((p) => p === undefined))
      return `${name} (seq ${seq}): its path is not a list of base64url hashes`;
    const leaf = merkleHasher.leafHash(auditLeafBytes(events[i] as { seq: number }));
    if (!merkleHasher.verifyInclusion(seq - 1, checkpoint.tree_size, leaf, path as Uint8Array[], root))
      return notLeaf(name, seq);
  }
  return undefined;
}

/** A list of 32-byte base64url hashes (and nulls, if allowed), or undefined. */
function hashList(value: unknown, nulls = false): (Uint8Array | null)[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const hashes = value.map((v) =>
    typeof v === 'string' ? fromBase64Url(v) : v === null && nulls ? null : undefined,
  );
  return hashes.every((h) => h === null || h?.length === 32) ? (hashes as (Uint8Array | null)[]) : undefined;
}

/**
 * The bundle's `log_proof` (docs/API.md#proving-the-log): one joint inclusion proof of every event.
 * An event whose recomputed leaf hash is not its listed one is named; when all agree, the leaves
 * and `nodes` must lead to the checkpoint's root (RFC 9162's MTH recursion, `multiproofRoot`).
 */
export function logProofProblem(
  events: readonly unknown[],
  logProof: unknown,
  checkpoint: Checkpoint,
): string | undefined {
  if (!isObject(logProof)) return 'log_proof must be an object {leaf_hashes, nodes}';
  const listed = hashList(logProof.leaf_hashes, true);
  if (!listed)
    return 'log_proof.leaf_hashes must be a list of base64url SHA-256 hashes (null for an event without seq)';
  if (listed.length !== events.length)
    return `the bundle has ${events.length} event(s) but ${listed.length} leaf hash(es)`;
  const nodes = hashList(logProof.nodes) as Uint8Array[] | undefined;
  if (!nodes) return 'log_proof.nodes must be a list of base64url SHA-256 hashes';
  const seqs = eventSeqs(events, checkpoint);
  if (typeof seqs === 'string') return seqs;
  for (let i = 0; i < events.length; i++) {
    const leaf = merkleHasher.leafHash(auditLeafBytes(events[i] as { seq: number }));
    const name = eventName(events[i], i);
    if (!listed[i]) return `${name} (seq ${seqs[i]!}) has no leaf hash in the log proof`;
    if (!equalBytes(leaf, listed[i]!)) return notLeaf(name, seqs[i]!);
  }
  const order = seqs.map((_, i) => i).sort((a, b) => seqs[a]! - seqs[b]!);
  const root = merkleHasher.multiproofRoot(
    checkpoint.tree_size,
    order.map((i) => seqs[i]! - 1),
    order.map((i) => listed[i]!),
    nodes,
  );
  if (!root || !equalBytes(root, fromBase64Url(checkpoint.root_hash)!))
    return `the log proof does not lead to the root of the checkpoint (tree_size ${checkpoint.tree_size}, root ${checkpoint.root_hash}): its nodes were altered, or the log was rewritten since the events were logged`;
  return undefined;
}

/**
 * Whether the kept checkpoint and the bundle's are of one log that only grew: equal roots at equal
 * sizes, else the RFC 9162 consistency proof from the smaller to the larger.
 */
export function consistencyProblem(
  kept: Checkpoint,
  current: Checkpoint,
  proof: ConsistencyProofFile | undefined,
): string | undefined {
  if (kept.tenant_id !== current.tenant_id)
    return `the kept checkpoint is of tenant ${kept.tenant_id}, the bundle's of ${current.tenant_id}`;
  const [small, large] = kept.tree_size <= current.tree_size ? [kept, current] : [current, kept];
  if (small.tree_size === large.tree_size)
    return small.root_hash === large.root_hash
      ? undefined
      : `the kept checkpoint (size ${kept.tree_size}) and the bundle's have the same size but different roots: the log was rewritten`;
  if (!proof)
    return `a consistency proof from ${small.tree_size} to ${large.tree_size} is needed (--consistency, from GET /v1/audit/consistency-proof?from=${small.tree_size}&to=${large.tree_size})`;
  if (proof.from !== small.tree_size || proof.to !== large.tree_size)
    return `the consistency proof is from ${proof.from} to ${proof.to}, not from ${small.tree_size} to ${large.tree_size}`;
  const path = proof.path.map((p) => fromBase64Url(p));
  if (path.some((p) => p === undefined))
    return 'the consistency proof holds something else than base64url hashes';
  const ok = merkleHasher.verifyConsistency(
    small.tree_size,
    large.tree_size,
    fromBase64Url(small.root_hash)!,
    fromBase64Url(large.root_hash)!,
    path as Uint8Array[],
  );
  return ok
    ? undefined
    : `the log of the checkpoint of size ${large.tree_size} does not extend the kept checkpoint of size ${small.tree_size}: history was rewritten`;
}
