import { AppError, badRequest, type Clock } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import {
  consistencyRanges,
  inclusionRanges,
  multiproofRanges,
  toBase64Url,
  type CheckpointClaims,
  type LeafRange,
} from '@mandate/shared/mandate';
import { encodeCursor, type Page } from '@mandate/shared/contract';
import type { AuditStore, StoredCheckpoint } from '../store/event-store';
import { auditLeafHash } from '../store/leaf-hash';
import { EventNotFound } from './events';

/**
 * The tenant's tamper-evident log (docs/API.md#proving-the-log): signed checkpoints, inclusion
 * and consistency proofs (RFC 9162 §2.1.3–2.1.4), hashes as base64url.
 */

/** Signs a tenant's checkpoint claims (the mandates service's Signer, the keys of the JWKS). */
export type CheckpointSigner = (claims: CheckpointClaims) => Promise<string>;

export class CheckpointNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'No checkpoint yet: the log is empty or not signed yet');
  }
}

export interface InclusionProof {
  seq: number;
  tree_size: number;
  leaf_hash: string;
  path: string[];
}

export interface ConsistencyProof {
  from: number;
  to: number;
  path: string[];
}

/**
 * A checkpoint of the tenant's whole log now, unless the latest already covers it (then that one).
 * Whichever replica stores a size first wins; the other's signature is dropped.
 */
export async function checkpointNow(
  store: AuditStore,
  sign: CheckpointSigner,
  tenantId: string,
  clock: Clock,
): Promise<StoredCheckpoint | null> {
  const [size, latest] = await Promise.all([store.logSize(tenantId), store.latestCheckpoint(tenantId)]);
  if (size === 0 || (latest && latest.tree_size >= size)) return latest;
  const [root] = await store.logHashes(tenantId, [[0, size]]);
  const claims: CheckpointClaims = {
    tenant_id: tenantId,
    tree_size: size,
    root_hash: toBase64Url(root!),
    issued_at: clock.now().toISOString(),
  };
  const jws = await sign(claims);
  await store.saveCheckpoint({ ...claims, jws });
  return store.getCheckpoint(tenantId, size);
}

/**
 * One periodic round (AUDIT_CHECKPOINT_SECONDS): a checkpoint for every tenant whose log has grown
 * since its latest. A tenant that fails is logged and the round goes on.
 */
export async function checkpointRound(
  store: AuditStore,
  signerFor: (tenantId: string) => CheckpointSigner,
  clock: Clock,
  logger: Logger,
): Promise<number> {
  let signed = 0;
  for (const { tenantId, size } of await store.logHeads()) {
    try {
      const latest = await store.latestCheckpoint(tenantId);
      if (latest && latest.tree_size >= size) continue;
      await checkpointNow(store, signerFor(tenantId), tenantId, clock);
      signed++;
    } catch (err) {
      logger.warn({ err, tenantId }, 'audit checkpoint not signed; next round tries again');
    }
  }
  return signed;
}

export async function latestCheckpoint(store: AuditStore, tenantId: string): Promise<StoredCheckpoint> {
  const latest = await store.latestCheckpoint(tenantId);
  if (!latest) throw new CheckpointNotFound();
  return latest;
}

/** Largest tree_size first; the cursor is the last size of the previous page. */
export async function listCheckpoints(
  store: AuditStore,
  tenantId: string,
  q: { limit: number; cursor?: string },
): Promise<Page<StoredCheckpoint>> {
  const beforeSize = q.cursor === undefined ? undefined : sizeCursor(q.cursor);
  const items = await store.listCheckpoints(tenantId, { limit: q.limit, beforeSize });
  const data = items.slice(0, q.limit);
  const last = data[data.length - 1];
  const hasMore = items.length > q.limit;
  return {
    data,
    has_more: hasMore,
    next_cursor: hasMore && last ? encodeCursor(String(last.tree_size)) : null,
  };
}

function sizeCursor(cursor: string): number {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof parsed.after === 'string' && /^[1-9][0-9]{0,15}$/.test(parsed.after))
      return Number(parsed.after);
  } catch {
    // fall through
  }
  throw badRequest('cursor is invalid');
}

/** tree_size must be that of a signed checkpoint: a proof is only worth one against a signed root. */
async function signedSize(store: AuditStore, tenantId: string, size: number, name: string): Promise<void> {
  if (!(await store.getCheckpoint(tenantId, size)))
    throw badRequest(`${name}=${size} is not the tree_size of a signed checkpoint`);
}

export async function inclusionProof(
  store: AuditStore,
  tenantId: string,
  eventId: string,
  treeSize: number,
): Promise<InclusionProof> {
  const event = await store.get(tenantId, eventId);
  if (!event) throw new EventNotFound();
  if (event.seq === undefined)
    throw badRequest(
      'the event has no seq: it was stored before the log (see the backfill in docs/OPERATIONS.md)',
    );
  await signedSize(store, tenantId, treeSize, 'tree_size');
  if (event.seq > treeSize)
    throw badRequest(`the event (seq ${event.seq}) is not in the tree of size ${treeSize}`);
  const path = await store.logHashes(tenantId, inclusionRanges(event.seq - 1, treeSize));
  return {
    seq: event.seq,
    tree_size: treeSize,
    leaf_hash: toBase64Url(auditLeafHash(event)),
    path: path.map(toBase64Url),
  };
}

/** Hashes read from the store per call while a log proof is written. */
const LOG_PROOF_BATCH = 1024;

/**
 * The joint inclusion proof of a bundle's events (docs/API.md#proving-the-log, "log_proof"), as
 * its two lists' JSON items, a batch at a time: first `leaf_hashes`, the stored leaf hash of each
 * seq in the given order (null for a seq missing or past the tree, an event without one), then
 * `nodes`, the hashes of `multiproofRanges` over those leaves. Each shared hash is listed once:
 * O(events + gaps·log n) hashes, each a stored node or an O(log n) right-edge composition.
 */
export async function* logProofParts(
  store: AuditStore,
  tenantId: string,
  seqs: readonly (number | undefined)[],
  treeSize: number,
): AsyncGenerator<{ list: 'leaf_hashes' | 'nodes'; items: string[] }> {
  const proven = (seq: number | undefined): seq is number => seq !== undefined && seq <= treeSize;
  for (let at = 0; at < seqs.length; at += LOG_PROOF_BATCH) {
    const batch = seqs.slice(at, at + LOG_PROOF_BATCH);
    const leaves = batch.filter(proven).map((seq): LeafRange => [seq - 1, seq]);
    const hashes = hashesToBase64Url(await store.logHashes(tenantId, leaves));
    let next = 0;
    // base64url needs no JSON escape: each item is written as JSON.stringify would.
    yield { list: 'leaf_hashes', items: batch.map((seq) => (proven(seq) ? `"${hashes[next++]!}"` : 'null')) };
  }
  const leaves = [...new Set(seqs.filter(proven))].map((seq) => seq - 1).sort((x, y) => x - y);
  const ranges = multiproofRanges(leaves, treeSize);
  for (let at = 0; at < ranges.length; at += LOG_PROOF_BATCH) {
    const hashes = hashesToBase64Url(await store.logHashes(tenantId, ranges.slice(at, at + LOG_PROOF_BATCH)));
    yield { list: 'nodes', items: hashes.map((hash) => `"${hash}"`) };
  }
}

export async function consistencyProof(
  store: AuditStore,
  tenantId: string,
  from: number,
  to: number,
): Promise<ConsistencyProof> {
  if (from > to) throw badRequest('from must not be above to');
  await signedSize(store, tenantId, from, 'from');
  await signedSize(store, tenantId, to, 'to');
  const path = await store.logHashes(tenantId, consistencyRanges(from, to));
  return { from, to, path: path.map(toBase64Url) };
}

/**
 * toBase64Url of each of many 32-byte hashes in one native call, for an evidence export's proofs
 * (docs/PERFORMANCE.md, "Tamper-evident log benchmark (issue 42)": a Buffer per hash was a third
 * of what the proofs cost). Each hash sits in a slot of 33 bytes, a multiple of 3, so no base64
 * group spans two slots; a slot's first 43 characters are the hash's unpadded base64url (the last
 * one's low bits come from the slot's zero byte, as they come from the encoder's zero bits alone).
 */
export function hashesToBase64Url(hashes: readonly Uint8Array[]): string[] {
  if (hashes.some((hash) => hash.length !== 32)) return hashes.map(toBase64Url);
  const slots = new Uint8Array(hashes.length * 33);
  for (let i = 0; i < hashes.length; i++) slots.set(hashes[i]!, i * 33);
  const text = Buffer.from(slots.buffer, 0, slots.length).toString('base64url');
  const out = new Array<string>(hashes.length);
  for (let i = 0; i < hashes.length; i++) out[i] = text.slice(i * 44, i * 44 + 43);
  return out;
}
