/**
 * RFC 9162 §2.1 Merkle trees (docs/API.md#proving-the-log): leaf hash SHA-256(0x00 || leaf),
 * interior node SHA-256(0x01 || left || right), the tree hash (MTH) of any size, inclusion and
 * consistency proofs (§2.1.3, §2.1.4), generated and verified. No import at all, so the module
 * runs in a browser as in Node: the SHA-256 it uses is handed in (`sha256` below is a small pure
 * implementation; the services pass Node's native one, `nodeSha256` in merkle-node.ts).
 *
 * Leaves are numbered from 0; a tree of size n holds leaves 0 … n-1. A perfect subtree is named by
 * its level (0 = a leaf) and index: node (level, i) covers leaves [i·2^level, (i+1)·2^level).
 * Every hash a proof holds is the MTH of a range of leaves, and every such range splits into at
 * most log2(n) perfect subtrees (`perfectNodes`): a store that keeps (or caches) perfect subtrees
 * answers any proof with O(log n) of them per path element.
 */

/** A synchronous SHA-256 over bytes. */
export type Sha256 = (data: Uint8Array) => Uint8Array;

/** A synchronous SHA-256 over bytes, its 32-byte digest written into `out` at `offset`. */
export type Sha256Into = (data: Uint8Array, out: Uint8Array, offset: number) => void;

/** A half-open range of leaf indexes [start, end). */
export type LeafRange = readonly [start: number, end: number];

/** A perfect subtree: level 0 is a leaf; (level, index) covers [index·2^level, (index+1)·2^level). */
export interface NodeId {
  level: number;
  index: number;
}

/** The largest power of two strictly below n (n ≥ 2): RFC 9162's split point k. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * The ranges whose MTH make up the inclusion proof of leaf m in a tree of size n (RFC 9162
 * §2.1.3.1, PATH(m, D[n])), in proof order: the leaf's sibling first, the root's child last.
 */
export function inclusionRanges(m: number, n: number): LeafRange[] {
  if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || m < 0 || m >= n)
    throw new RangeError(`no leaf ${m} in a tree of size ${n}`);
  const out: LeafRange[] = [];
  let start = 0;
  let end = n;
  // Descend from the root; each step records the other half, and the proof lists them bottom-up.
  while (end - start > 1) {
    const k = splitPoint(end - start);
    if (m < start + k) {
      out.push([start + k, end]);
      end = start + k;
    } else {
      out.push([start, start + k]);
      start += k;
    }
  }
  return out.reverse();
}

/**
 * The ranges whose MTH make up the consistency proof between tree sizes m and n (RFC 9162
 * §2.1.4.1, PROOF(m, D[n]) = SUBPROOF(m, D[n], true)), in proof order. Empty when m = n.
 */
export function consistencyRanges(m: number, n: number): LeafRange[] {
  if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || m < 1 || m > n)
    throw new RangeError(`no consistency proof from size ${m} to size ${n}`);
  const out: LeafRange[] = [];
  let start = 0;
  let end = n;
  let sub = m; // SUBPROOF(sub, D[start:end], whole)
  let whole = true;
  for (;;) {
    const size = end - start;
    if (sub === size) {
      if (!whole) out.push([start, end]);
      break;
    }
    const k = splitPoint(size);
    if (sub <= k) {
      out.push([start + k, end]);
      end = start + k;
    } else {
      out.push([start, start + k]);
      start += k;
      sub -= k;
      whole = false;
    }
  }
  return out.reverse();
}

/**
 * The perfect subtrees, left to right, whose hashes give the MTH of [start, end) by `rangeHash`,
 * for the ranges the proofs above produce (start a multiple of the largest power of two that fits
 * in end - start, as every RFC 9162 split is) and for any [0, n).
 */
export function perfectNodes(start: number, end: number): NodeId[] {
  const out: NodeId[] = [];
  while (start < end) {
    const size = end - start;
    // Largest power of two ≤ size that start is aligned to.
    let level = Math.floor(Math.log2(size));
    while (level > 0 && (2 ** level > size || start % 2 ** level !== 0)) level--;
    out.push({ level, index: start / 2 ** level });
    start += 2 ** level;
  }
  return out;
}

/**
 * A joint inclusion proof of several leaves (docs/API.md#proving-the-log, "log_proof"): the
 * maximal ranges of RFC 9162's MTH recursion that hold none of `leaves` (sorted, distinct, each
 * below n), left to right. The recursion splits [start, end) at the largest power of two below its
 * size; a range with no listed leaf is one supplied hash, a single listed leaf is its leaf hash.
 * Each range is a perfect subtree or runs to n, as the inclusion ranges do. O(leaves + gaps·log n).
 */
export function multiproofRanges(leaves: readonly number[], n: number): LeafRange[] {
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`no tree of size ${n}`);
  leaves.forEach((leaf, i) => {
    if (!Number.isSafeInteger(leaf) || leaf < 0 || leaf >= n || (i > 0 && leaf <= leaves[i - 1]!))
      throw new RangeError(`leaves must be sorted, distinct and below ${n}`);
  });
  const out: LeafRange[] = [];
  walkMultiproof(leaves, 0, leaves.length, 0, n, {
    gap: (range) => void out.push(range),
    leaf: () => undefined,
    join: () => undefined,
  });
  return out;
}

/** What a walk of RFC 9162's MTH recursion meets, in the order the hashes combine (left to right). */
interface MultiproofVisitor {
  /** A range holding no listed leaf: one supplied hash. */
  gap(range: LeafRange): void;
  /** A listed leaf: its leaf hash (the i-th listed). */
  leaf(i: number): void;
  /** The two hashes met last join into their parent's. */
  join(): void;
}

/** The MTH recursion over [start, end), which holds leaves[lo, hi) (sorted). */
function walkMultiproof(
  leaves: readonly number[],
  lo: number,
  hi: number,
  start: number,
  end: number,
  visit: MultiproofVisitor,
): void {
  if (lo === hi) return visit.gap([start, end]);
  if (end - start === 1) return visit.leaf(lo);
  const split = start + splitPoint(end - start);
  // The first listed leaf at or right of the split (binary search: the leaves are sorted).
  let a = lo;
  let b = hi;
  while (a < b) {
    const mid = (a + b) >>> 1;
    if (leaves[mid]! < split) a = mid + 1;
    else b = mid;
  }
  walkMultiproof(leaves, lo, a, start, split, visit);
  walkMultiproof(leaves, a, hi, split, end, visit);
  visit.join();
}

const EMPTY = new Uint8Array(0);

/** The hash functions of RFC 9162 §2.1.1 over a given SHA-256. */
export class MerkleHasher {
  /**
   * 0x01 || left || right for two 32-byte hashes, reused: a log appends one interior node per leaf
   * on average, and a fresh input buffer per node was a third of its cost (docs/PERFORMANCE.md,
   * "Tamper-evident log benchmark (issue 42)"). Safe because sha256 and sha256Into are synchronous and keep no reference.
   */
  private readonly nodeInput = new Uint8Array(65);

  /**
   * `sha256Into`, where given, writes a digest where it is kept with no object of its own: the
   * memory tree hashes every leaf and interior node straight into its rows (docs/PERFORMANCE.md,
   * "Tamper-evident log benchmark (issue 42)").
   */
  constructor(
    readonly sha256: Sha256,
    readonly sha256Into: Sha256Into = (data, out, offset) => out.set(sha256(data), offset),
  ) {
    this.nodeInput[0] = 1;
  }

  /** MTH({}) = SHA-256() */
  emptyRoot(): Uint8Array {
    return this.sha256(EMPTY);
  }

  /** SHA-256(0x00 || leaf) */
  leafHash(leaf: Uint8Array): Uint8Array {
    const input = new Uint8Array(leaf.length + 1);
    input[0] = 0;
    input.set(leaf, 1);
    return this.sha256(input);
  }

  /** SHA-256(0x01 || left || right) */
  nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
    if (left.length === 32 && right.length === 32) {
      this.nodeInput.set(left, 1);
      this.nodeInput.set(right, 33);
      return this.sha256(this.nodeInput);
    }
    const input = new Uint8Array(1 + left.length + right.length);
    input[0] = 1;
    input.set(left, 1);
    input.set(right, 1 + left.length);
    return this.sha256(input);
  }

  /**
   * SHA-256(0x01 || left || right) of two 32-byte sibling hashes that sit side by side in `row`
   * from `start`, written into `out` at `offset`: a tree that keeps its nodes in rows hashes a
   * parent with no object per hash.
   */
  nodeHashInto(row: Uint8Array, start: number, out: Uint8Array, offset: number): void {
    const input = this.nodeInput;
    for (let i = 0; i < 64; i++) input[1 + i] = row[start + i]!;
    this.sha256Into(input, out, offset);
  }

  /** The MTH of a range from its perfect subtrees, left to right (as `perfectNodes` lists them). */
  rangeHash(nodes: readonly Uint8Array[]): Uint8Array {
    if (nodes.length === 0) return this.emptyRoot();
    let hash = nodes[nodes.length - 1]!;
    for (let i = nodes.length - 2; i >= 0; i--) hash = this.nodeHash(nodes[i]!, hash);
    return hash;
  }

  /**
   * The root of the tree of size n that a multiproof leads to (docs/API.md#proving-the-log): the
   * leaves' hashes (`leafHashes[i]` is leaf `leaves[i]`; sorted, distinct, below n) and the hashes
   * of `multiproofRanges(leaves, n)`, in that order. Undefined when the nodes are too few or too many.
   */
  multiproofRoot(
    n: number,
    leaves: readonly number[],
    leafHashes: readonly Uint8Array[],
    nodes: readonly Uint8Array[],
  ): Uint8Array | undefined {
    if (leafHashes.length !== leaves.length) return undefined;
    let ranges: LeafRange[];
    try {
      ranges = multiproofRanges(leaves, n);
    } catch {
      return undefined;
    }
    if (ranges.length !== nodes.length) return undefined;
    // A stack machine: a listed leaf or a gap pushes its hash, each split joins the top two.
    const stack: Uint8Array[] = [];
    let next = 0;
    walkMultiproof(leaves, 0, leaves.length, 0, n, {
      gap: () => void stack.push(nodes[next++]!),
      leaf: (i) => void stack.push(leafHashes[i]!),
      join: () => {
        const right = stack.pop()!;
        stack.push(this.nodeHash(stack.pop()!, right));
      },
    });
    return stack.length === 1 ? stack[0] : undefined;
  }

  /**
   * RFC 9162 §2.1.3.2: does `path` prove that `leafHash` is leaf `index` of the tree of size
   * `treeSize` whose root is `root`?
   */
  verifyInclusion(
    index: number,
    treeSize: number,
    leafHash: Uint8Array,
    path: readonly Uint8Array[],
    root: Uint8Array,
  ): boolean {
    if (!Number.isSafeInteger(index) || !Number.isSafeInteger(treeSize) || index < 0 || index >= treeSize)
      return false;
    let fn = index;
    let sn = treeSize - 1;
    let r = leafHash;
    for (const p of path) {
      if (sn === 0) return false;
      if (fn % 2 === 1 || fn === sn) {
        r = this.nodeHash(p, r);
        if (fn % 2 === 0) {
          while (fn % 2 === 0 && fn !== 0) {
            fn = Math.floor(fn / 2);
            sn = Math.floor(sn / 2);
          }
        }
      } else {
        r = this.nodeHash(r, p);
      }
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    return sn === 0 && equalBytes(r, root);
  }

  /**
   * RFC 9162 §2.1.4.2: does `path` prove that the tree of size `first` with root `firstRoot` is a
   * prefix of the tree of size `second` with root `secondRoot`?
   */
  verifyConsistency(
    first: number,
    second: number,
    firstRoot: Uint8Array,
    secondRoot: Uint8Array,
    path: readonly Uint8Array[],
  ): boolean {
    if (!Number.isSafeInteger(first) || !Number.isSafeInteger(second) || first < 1 || first > second)
      return false;
    if (first === second) return path.length === 0 && equalBytes(firstRoot, secondRoot);
    let proof = path;
    // If first is an exact power of 2, the first tree's root is the first node of the path.
    if (Number.isInteger(Math.log2(first))) proof = [firstRoot, ...path];
    if (proof.length === 0) return false;
    let fn = first - 1;
    let sn = second - 1;
    while (fn % 2 === 1) {
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    let fr = proof[0]!;
    let sr = proof[0]!;
    for (const c of proof.slice(1)) {
      if (sn === 0) return false;
      if (fn % 2 === 1 || fn === sn) {
        fr = this.nodeHash(c, fr);
        sr = this.nodeHash(c, sr);
        if (fn % 2 === 0) {
          while (fn % 2 === 0 && fn !== 0) {
            fn = Math.floor(fn / 2);
            sn = Math.floor(sn / 2);
          }
        }
      } else {
        sr = this.nodeHash(sr, c);
      }
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    return sn === 0 && equalBytes(fr, firstRoot) && equalBytes(sr, secondRoot);
  }
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/**
 * A Merkle tree held in memory: every perfect subtree's hash, 32 bytes each in one growing buffer
 * per level (about 64 bytes per leaf in all). Appending is O(1) amortized (O(log n) at worst), a
 * range hash O(log n), a proof O(log² n) hash reads and O(log n) hash computations.
 */
export class MemoryMerkleTree {
  private readonly levels: { bytes: Uint8Array; count: number }[] = [];

  constructor(private readonly hasher: MerkleHasher) {}

  get size(): number {
    return this.levels[0]?.count ?? 0;
  }

  /** Appends a leaf hash (already SHA-256(0x00 || leaf)); returns its index. */
  append(leafHash: Uint8Array): number {
    if (leafHash.length !== 32) throw new RangeError('a leaf hash is 32 bytes');
    const index = this.reserve(0);
    this.levels[0]!.bytes.set(leafHash, index * 32);
    this.hashParents(index);
    return index;
  }

  /**
   * Appends the leaf whose hash input, 0x00 || leaf, is given; returns its index. The leaf's hash
   * and the interior nodes it completes are written straight into the rows.
   */
  appendHashOf(leafInput: Uint8Array): number {
    const index = this.reserve(0);
    this.hasher.sha256Into(leafInput, this.levels[0]!.bytes, index * 32);
    this.hashParents(index);
    return index;
  }

  /** The perfect subtrees that the leaf just written at `index` completes, lowest first. */
  private hashParents(index: number): void {
    let level = 0;
    while (index % 2 === 1) {
      // Siblings sit side by side in their row: the left one is just before the right one.
      const row = this.levels[level]!.bytes;
      const start = (index - 1) * 32;
      level++;
      index = this.reserve(level);
      this.hasher.nodeHashInto(row, start, this.levels[level]!.bytes, index * 32);
    }
  }

  /** The hash of a stored perfect subtree. */
  node(level: number, index: number): Uint8Array {
    const row = this.levels[level];
    if (!row || index >= row.count) throw new RangeError(`no node (${level}, ${index})`);
    return row.bytes.subarray(index * 32, index * 32 + 32);
  }

  /** MTH of leaves [start, end). */
  rangeHash(start: number, end: number): Uint8Array {
    if (end > this.size) throw new RangeError(`the tree has ${this.size} leaves, not ${end}`);
    // A perfect subtree (most of a proof's ranges) is one stored node: no list of nodes to build.
    const size = end - start;
    if (size > 0 && size < 2 ** 31 && (size & (size - 1)) === 0 && start % size === 0)
      return this.node(31 - Math.clz32(size), start / size);
    return this.hasher.rangeHash(perfectNodes(start, end).map((n) => this.node(n.level, n.index)));
  }

  root(size = this.size): Uint8Array {
    return this.rangeHash(0, size);
  }

  inclusionProof(index: number, size: number): Uint8Array[] {
    return inclusionRanges(index, size).map(([s, e]) => this.rangeHash(s, e));
  }

  consistencyProof(first: number, second: number): Uint8Array[] {
    if (second > this.size) throw new RangeError(`the tree has ${this.size} leaves, not ${second}`);
    return consistencyRanges(first, second).map(([s, e]) => this.rangeHash(s, e));
  }

  /** The index of a new node at the end of the level's row, grown to hold its 32 bytes. */
  private reserve(level: number): number {
    let row = this.levels[level];
    if (!row) {
      row = { bytes: new Uint8Array(32 * 16), count: 0 };
      this.levels[level] = row;
    }
    if ((row.count + 1) * 32 > row.bytes.length) {
      const grown = new Uint8Array(row.bytes.length * 2);
      grown.set(row.bytes);
      row.bytes = grown;
    }
    return row.count++;
  }
}

/** Node's Buffer where there is one (the services): its base64url is native. */
const NodeBuffer = (
  globalThis as {
    Buffer?: { from(b: ArrayBufferLike, offset: number, length: number): { toString(enc: string): string } };
  }
).Buffer;

/** base64url without padding, as the proofs and checkpoints carry hashes. */
export function toBase64Url(bytes: Uint8Array): string {
  // An evidence bundle writes ~20 of these per event: the native encoder where there is one.
  if (NodeBuffer) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('base64url');
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The bytes of a base64url string (no padding); undefined if it is not one. */
export function fromBase64Url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return undefined;
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** UTF-8 bytes of a string. */
export function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

// ── a small pure SHA-256 (FIPS 180-4), for where no native one is at hand ──

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

/** SHA-256 in plain TypeScript (no Web Crypto, which is asynchronous). */
export const sha256: Sha256 = (data) => {
  const bitLength = data.length * 8;
  const padded = new Uint8Array(Math.ceil((data.length + 9) / 64) * 64);
  padded.set(data);
  padded[data.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(bitLength / 2 ** 32));
  view.setUint32(padded.length - 4, bitLength >>> 0);
  const h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));
  for (let off = 0; off < padded.length; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(off + i * 4);
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!;
      const b = w[i - 2]!;
      const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3);
      const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, hh] = [h[0]!, h[1]!, h[2]!, h[3]!, h[4]!, h[5]!, h[6]!, h[7]!];
    for (let i = 0; i < 64; i++) {
      const s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + s1 + ch + K[i]! + w[i]!) >>> 0;
      const s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (s0 + maj) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    h[0] = (h[0]! + a) >>> 0;
    h[1] = (h[1]! + b) >>> 0;
    h[2] = (h[2]! + c) >>> 0;
    h[3] = (h[3]! + d) >>> 0;
    h[4] = (h[4]! + e) >>> 0;
    h[5] = (h[5]! + f) >>> 0;
    h[6] = (h[6]! + g) >>> 0;
    h[7] = (h[7]! + hh) >>> 0;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) outView.setUint32(i * 4, h[i]!);
  return out;
};
