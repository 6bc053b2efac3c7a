import {
  canonicalJson,
  AUDIT_CHECKPOINT_TYP,
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
 * event, hashed as SHA-256(0x00 || RFC 8785 JSON of the event), is leaf seq-1 of that tree by its
 * RFC 9162 inclusion path; and, given a checkpoint the auditor kept, the two trees are consistent.
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

/**
 * The first event whose proof fails, named, or undefined when all hold. `proofs` is aligned with
 * `events`; each event's seq must be the proof's and within the checkpoint's tree.
 */
export function firstFailingEvent(
  events: readonly unknown[],
  proofs: readonly unknown[],
  checkpoint: Checkpoint,
): string | undefined {
  if (proofs.length !== events.length)
    return `the bundle has ${events.length} event(s) but ${proofs.length} proof(s)`;
  const root = fromBase64Url(checkpoint.root_hash)!;
  const seen = new Set<number>();
  for (let i = 0; i < events.length; i++) {
    const event = events[i];
    const proof = proofs[i];
    const name = `event ${isObject(event) ? String(event.id) : `#${i}`} (position ${i + 1})`;
    if (!isObject(event)) return `${name} is not an object`;
    const seq = event.seq;
    if (!Number.isSafeInteger(seq) || (seq as number) < 1)
      return `${name} has no seq: it is not in the log (stored outside it, or before the backfill)`;
    if (!isObject(proof)) return `${name} (seq ${String(seq)}) has no inclusion proof`;
    if (proof.seq !== seq)
      return `${name} has seq ${String(seq)} but its proof is for seq ${String(proof.seq)}`;
    if (seen.has(seq as number))
      return `${name} has seq ${String(seq)}, which another event of the bundle has`;
    seen.add(seq as number);
    if ((seq as number) > checkpoint.tree_size)
      return `${name} has seq ${String(seq)}, outside the checkpoint's tree of size ${checkpoint.tree_size}`;
    const path = Array.isArray(proof.path)
      ? proof.path.map((p) => (typeof p === 'string' ? fromBase64Url(p) : undefined))
      : undefined;
    if (!path || path.some((p) => p === undefined))
      return `${name} (seq ${String(seq)}): its path is not a list of base64url hashes`;
    const ok = merkleHasher.verifyInclusion(
      (seq as number) - 1,
      checkpoint.tree_size,
      merkleHasher.leafHash(auditLeafBytes(event)),
      path as Uint8Array[],
      root,
    );
    if (!ok)
      return `${name} (seq ${String(seq)}) is not leaf ${String(seq)} of the log the checkpoint signs: it was altered, moved or never logged`;
  }
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
