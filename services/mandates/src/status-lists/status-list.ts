import { deflateSync } from 'node:zlib';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { effectiveState, type MandateState } from '../domain/mandate';

/**
 * Mandate status lists (docs/DECISIONS.md, "Status lists (v3)", IETF Token Status List, JWT form): 2 bits per mandate, entry `i`
 * in byte floor(i / 4) at bit offset 2 * (i % 4), least significant first, zlib-deflated.
 */
export const STATUS_LIST_CAPACITY = 100_000;
export const STATUS_LIST_BITS = 2;
export const STATUS_LIST_JWT_TYP = 'statuslist+jwt';
export const STATUS_LIST_CONTENT_TYPE = 'application/statuslist+jwt';

export const STATUS = { VALID: 0, INVALID: 1, SUSPENDED: 2 } as const;

/** A mandate's place in a list: allocated once at creation, never reused. */
export interface StatusSlot {
  list_id: string;
  idx: number;
}

/** What the store knows of one slot at publication time: the mandate's stored state. */
export interface StatusEntry {
  idx: number;
  state: MandateState;
  expires_at: string | null;
}

/** The signed list as last published, shared by every replica (one ETag for one content). */
export interface PublishedStatusList {
  token: string;
  etag: string;
  /** sha256 of the uncompressed bytes: what decides whether the content changed. */
  digest: string;
  iat: number;
  exp: number;
}

export interface StatusListRecord {
  list_id: string;
  /** Lists are numbered 1, 2, …; the highest is the one slots are allocated from. */
  seq: number;
  /** Slots handed out so far (the next idx); the list is closed when it reaches capacity. */
  next_idx: number;
  capacity: number;
  published: PublishedStatusList | null;
  /**
   * Keys the order slots are handed out in (slotAt), never served. Absent on lists opened before
   * v4, which keep handing out slots in sequence (their first slots were taken that way).
   */
  slot_key?: string;
}

export const listIdOf = (seq: number) => `sl_${seq}`;

/** The list opened when `open` (the highest) is full, or the first one: empty, unpublished, numbered next. */
export function nextStatusList(
  open: Pick<StatusListRecord, 'seq'> | null | undefined,
  capacity: number = STATUS_LIST_CAPACITY,
): StatusListRecord {
  const seq = (open?.seq ?? 0) + 1;
  return {
    list_id: listIdOf(seq),
    seq,
    next_idx: 0,
    capacity,
    published: null,
    slot_key: randomBytes(16).toString('hex'),
  };
}

/**
 * The slot of the `n`-th mandate of a list (docs/DECISIONS.md#status-lists-v3): a keyed permutation
 * of [0, capacity), so slots are never reused and never in sequence, and without the list's key the
 * indexes of one tenant say nothing about how many mandates others created in between. A
 * four-round Feistel network over the smallest even power of two that holds `capacity`, walked
 * again while it lands outside (fewer than four steps on average). A list without a key
 * (opened before v4) hands out `n`.
 */
export function slotAt(key: string | undefined, n: number, capacity: number): number {
  if (!key) return n;
  let half = 1;
  while (2 ** (2 * half) < capacity) half++;
  const mask = 2 ** half - 1;
  let x = n;
  do {
    let left = Math.floor(x / 2 ** half);
    let right = x & mask;
    for (let round = 0; round < 4; round++) {
      const f = createHmac('sha256', key).update(`${round}:${right}`).digest().readUInt32BE(0) & mask;
      [left, right] = [right, left ^ f];
    }
    x = left * 2 ** half + right;
  } while (x >= capacity);
  return x;
}
export const LIST_ID_PATTERN = /^sl_[1-9][0-9]{0,8}$/;

/** The status a reader must see now: expiry counts the moment expires_at passes, before the sweeper. */
export function statusOf(entry: Pick<StatusEntry, 'state' | 'expires_at'>, now: Date): number {
  switch (effectiveState(entry, now)) {
    case 'ACTIVE':
      return STATUS.VALID;
    case 'SUSPENDED':
      return STATUS.SUSPENDED;
    default:
      return STATUS.INVALID;
  }
}

/** The uncompressed list: the whole capacity, so its size says nothing about how many mandates exist. */
export function encodeStatuses(entries: readonly StatusEntry[], capacity: number, now: Date): Buffer {
  const bytes = Buffer.alloc(Math.ceil(capacity / 4));
  for (const entry of entries) {
    bytes[entry.idx >> 2]! |= statusOf(entry, now) << ((entry.idx & 3) * 2);
  }
  return bytes;
}

export const compressStatuses = (bytes: Buffer): string => deflateSync(bytes).toString('base64url');
export const digestOf = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
export const etagOf = (token: string): string =>
  `"${createHash('sha256').update(token).digest('base64url').slice(0, 27)}"`;

/** Whether an If-None-Match header names this ETag (a list, weak or strong, or `*`). */
export function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .some((t) => t === '*' || t === etag);
}
