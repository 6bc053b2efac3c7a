import { AppError, badRequest, type Clock } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import {
  consistencyRanges,
  inclusionRanges,
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

/**
 * What `inclusionPaths` keeps from one batch to the next: per depth below the root, the range last
 * seen there and its encoded hash (a number while the batch's hash is still to be read).
 */
export class InclusionPathCache {
  readonly keys: number[] = [];
  readonly texts: (string | number)[] = [];
}

/**
 * Inclusion paths of many seqs in one tree, in order (the evidence export, a batch at a time). The
 * paths of nearby seqs share their upper hashes: a range is read and encoded once while the seqs
 * that need it follow each other. `cache` holds, per depth, the last range seen there, across
 * batches: in seq order (as an export lists its events) a path reads only the ranges below where
 * it leaves the previous one, with an array lookup per range, not a Map (docs/PERFORMANCE.md,
 * "Tamper-evident log benchmark (issue 42)"). Seqs out of order only read more.
 */
export async function inclusionPaths(
  store: AuditStore,
  tenantId: string,
  seqs: number[],
  treeSize: number,
  cache: InclusionPathCache = new InclusionPathCache(),
): Promise<string[][]> {
  // Each range of a path is a perfect subtree or runs to the tree's end (RFC 9162's recursion
  // splits off a power of two on the left), so (start, its size's log2 or "to the end") names it
  // as one number.
  const keyOf = (r: LeafRange) => {
    const size = r[1] - r[0];
    const log2 = size < 2 ** 31 ? 31 - Math.clz32(size) : Math.round(Math.log2(size));
    return r[0] * 64 + (r[1] === treeSize ? 63 : log2);
  };
  const { keys, texts } = cache;
  const wanted: LeafRange[] = [];
  // (path, position, index in wanted) for each hash still to be read.
  const pendingPaths: string[][] = [];
  const pendingAt: number[] = [];
  const pendingSlot: number[] = [];
  const paths: string[][] = [];
  for (const seq of seqs) {
    const ranges = inclusionRanges(seq - 1, treeSize);
    const path = new Array<string>(ranges.length);
    for (let i = 0; i < ranges.length; i++) {
      const depth = ranges.length - 1 - i; // the proof lists ranges bottom-up
      const range = ranges[i]!;
      const key = keyOf(range);
      let text = keys[depth] === key ? texts[depth]! : undefined;
      if (text === undefined) {
        text = wanted.length;
        wanted.push(range);
        keys[depth] = key;
        texts[depth] = text;
      }
      if (typeof text === 'string') path[i] = text;
      else {
        pendingPaths.push(path);
        pendingAt.push(i);
        pendingSlot.push(text);
      }
    }
    paths.push(path);
  }
  const encoded = hashesToBase64Url(await store.logHashes(tenantId, wanted));
  for (let j = 0; j < pendingPaths.length; j++) pendingPaths[j]![pendingAt[j]!] = encoded[pendingSlot[j]!]!;
  for (let depth = 0; depth < texts.length; depth++) {
    const text = texts[depth];
    if (typeof text === 'number') texts[depth] = encoded[text]!;
  }
  return paths;
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
