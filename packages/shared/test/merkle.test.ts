import crypto from 'node:crypto';
import fc from 'fast-check';
import {
  MemoryMerkleTree,
  consistencyRanges,
  fromBase64Url,
  inclusionRanges,
  merkleHasher,
  multiproofRanges,
  toBase64Url,
} from '../src/mandate';
import { MerkleHasher, sha256 } from '../src/mandate/merkle';

// ── RFC 9162 §2.1, computed independently here: the definitions, recursively, over node:crypto ──

const H = (...parts: Uint8Array[]) => crypto.createHash('sha256').update(Buffer.concat(parts)).digest();
const k = (n: number) => 2 ** Math.ceil(Math.log2(n) - 1); // largest power of two < n

function mth(d: Uint8Array[]): Buffer {
  if (d.length === 0) return H();
  if (d.length === 1) return H(Buffer.from([0]), d[0]!);
  const split = k(d.length);
  return H(Buffer.from([1]), mth(d.slice(0, split)), mth(d.slice(split)));
}

function path(m: number, d: Uint8Array[]): Buffer[] {
  if (d.length === 1) return [];
  const split = k(d.length);
  return m < split
    ? [...path(m, d.slice(0, split)), mth(d.slice(split))]
    : [...path(m - split, d.slice(split)), mth(d.slice(0, split))];
}

function subproof(m: number, d: Uint8Array[], b: boolean): Buffer[] {
  if (m === d.length) return b ? [] : [mth(d)];
  const split = k(d.length);
  return m <= split
    ? [...subproof(m, d.slice(0, split), b), mth(d.slice(split))]
    : [...subproof(m - split, d.slice(split), false), mth(d.slice(0, split))];
}

/** A multiproof's supplied hashes: the MTH of each maximal range of the recursion with no listed leaf. */
function multiproof(listed: readonly number[], d: Uint8Array[], offset = 0): Buffer[] {
  if (!listed.some((m) => m >= offset && m < offset + d.length)) return [mth(d)];
  if (d.length === 1) return [];
  const split = k(d.length);
  return [
    ...multiproof(listed, d.slice(0, split), offset),
    ...multiproof(listed, d.slice(split), offset + split),
  ];
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** The leaves of the reference test tree of RFC 6962's implementations (certificate-transparency). */
const VECTOR_LEAVES = [
  '',
  '00',
  '10',
  '2021',
  '3031',
  '40414243',
  '5051525354555657',
  '606162636465666768696a6b6c6d6e6f',
].map((h) => Buffer.from(h, 'hex'));

/** The roots of its first 1 … 8 leaves. */
const VECTOR_ROOTS = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];

function treeOf(leaves: Uint8Array[], hasher: MerkleHasher = merkleHasher): MemoryMerkleTree {
  const tree = new MemoryMerkleTree(hasher);
  for (const leaf of leaves) tree.append(hasher.leafHash(leaf));
  return tree;
}

const leavesOf = (n: number) => Array.from({ length: n }, (_, i) => Buffer.from(`leaf ${i}`));

describe('RFC 9162 Merkle tree', () => {
  it('when the reference leaves are appended one by one, then every prefix has the known root', () => {
    const tree = new MemoryMerkleTree(merkleHasher);
    expect(hex(tree.root(0))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    VECTOR_LEAVES.forEach((leaf, i) => {
      tree.append(merkleHasher.leafHash(leaf));
      expect(hex(tree.root())).toBe(VECTOR_ROOTS[i]);
      expect(hex(mth(VECTOR_LEAVES.slice(0, i + 1)))).toBe(VECTOR_ROOTS[i]);
    });
  });

  it('when the pure SHA-256 hashes any bytes, then it equals node:crypto', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (data) => {
        expect(hex(sha256(data))).toBe(hex(H(data)));
      }),
    );
    const pure = treeOf(VECTOR_LEAVES, new MerkleHasher(sha256));
    expect(hex(pure.root())).toBe(VECTOR_ROOTS[7]);
  });

  it('when leaves are appended by their hash input (appendHashOf), then every prefix has the root of the definitions, on both SHA-256s', () => {
    const all = [...VECTOR_LEAVES, ...leavesOf(70)];
    // Node's, which writes digests into the rows, and the pure one through the default sha256Into.
    for (const hasher of [merkleHasher, new MerkleHasher(sha256)]) {
      const tree = new MemoryMerkleTree(hasher);
      all.forEach((leaf, i) => {
        expect(tree.appendHashOf(Buffer.concat([Buffer.from([0]), leaf]))).toBe(i);
        expect(hex(tree.root())).toBe(hex(mth(all.slice(0, i + 1))));
      });
      expect(hex(tree.root(VECTOR_LEAVES.length))).toBe(VECTOR_ROOTS[7]);
    }
  });

  it('when trees of every size up to 40 are built, then root, inclusion and consistency proofs equal the definitions and verify', () => {
    const all = leavesOf(40);
    const tree = new MemoryMerkleTree(merkleHasher);
    for (let n = 1; n <= all.length; n++) {
      tree.append(merkleHasher.leafHash(all[n - 1]!));
      const d = all.slice(0, n);
      const root = tree.root(n);
      expect(hex(root)).toBe(hex(mth(d)));
      for (let m = 0; m < n; m++) {
        const proof = tree.inclusionProof(m, n);
        expect(proof.map(hex)).toEqual(path(m, d).map(hex));
        expect(merkleHasher.verifyInclusion(m, n, merkleHasher.leafHash(d[m]!), proof, root)).toBe(true);
      }
      for (let m = 1; m <= n; m++) {
        const proof = tree.consistencyProof(m, n);
        expect(proof.map(hex)).toEqual(subproof(m, d, true).map(hex));
        expect(merkleHasher.verifyConsistency(m, n, tree.root(m), root, proof)).toBe(true);
      }
    }
  });

  it('when any proof element, the leaf, the index or a root is changed, then verification fails', () => {
    const all = leavesOf(37);
    const tree = treeOf(all);
    const n = 37;
    const root = tree.root(n);
    const flip = (b: Uint8Array) => {
      const c = Uint8Array.from(b);
      c[0]! ^= 1;
      return c;
    };
    for (const m of [0, 5, 31, 32, 36]) {
      const leaf = merkleHasher.leafHash(all[m]!);
      const proof = tree.inclusionProof(m, n);
      expect(merkleHasher.verifyInclusion(m, n, flip(leaf), proof, root)).toBe(false);
      expect(merkleHasher.verifyInclusion(m, n, leaf, proof, flip(root))).toBe(false);
      expect(merkleHasher.verifyInclusion(m === 0 ? 1 : m - 1, n, leaf, proof, root)).toBe(false);
      expect(merkleHasher.verifyInclusion(m, n, leaf, proof.slice(1), root)).toBe(false);
      expect(merkleHasher.verifyInclusion(m, n, leaf, [...proof, proof[0]!], root)).toBe(false);
      proof.forEach((_, i) => {
        const bad = proof.map((p, j) => (j === i ? flip(p) : p));
        expect(merkleHasher.verifyInclusion(m, n, leaf, bad, root)).toBe(false);
      });
    }
    for (const m of [1, 4, 13, 32]) {
      const old = tree.root(m);
      const proof = tree.consistencyProof(m, n);
      expect(merkleHasher.verifyConsistency(m, n, flip(old), root, proof)).toBe(false);
      expect(merkleHasher.verifyConsistency(m, n, old, flip(root), proof)).toBe(false);
      expect(merkleHasher.verifyConsistency(m + 1, n, old, root, proof)).toBe(false);
      proof.forEach((_, i) => {
        const bad = proof.map((p, j) => (j === i ? flip(p) : p));
        expect(merkleHasher.verifyConsistency(m, n, old, root, bad)).toBe(false);
      });
    }
  });

  it('when history is rewritten (one early leaf changed), then the new tree is not consistent with the old root', () => {
    const all = leavesOf(20);
    const honest = treeOf(all);
    const rewritten = treeOf(all.map((l, i) => (i === 3 ? Buffer.from('forged') : l)));
    const proof = rewritten.consistencyProof(8, 20);
    expect(merkleHasher.verifyConsistency(8, 20, honest.root(8), rewritten.root(20), proof)).toBe(false);
    // Leaves after the old size may change freely: only the prefix is committed to.
    const appended = treeOf(all.map((l, i) => (i === 15 ? Buffer.from('later') : l)));
    expect(
      merkleHasher.verifyConsistency(
        8,
        20,
        honest.root(8),
        appended.root(20),
        appended.consistencyProof(8, 20),
      ),
    ).toBe(true);
  });

  it('when ranges are asked out of bounds, then they throw', () => {
    expect(() => inclusionRanges(3, 3)).toThrow(RangeError);
    expect(() => inclusionRanges(-1, 3)).toThrow(RangeError);
    expect(() => consistencyRanges(0, 3)).toThrow(RangeError);
    expect(() => consistencyRanges(4, 3)).toThrow(RangeError);
    expect(consistencyRanges(3, 3)).toEqual([]);
  });

  it('when bytes go to base64url and back, then they are the same; invalid text is undefined', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const text = toBase64Url(bytes);
        expect(text).toBe(Buffer.from(bytes).toString('base64url'));
        expect(hex(fromBase64Url(text)!)).toBe(hex(bytes));
      }),
    );
    expect(fromBase64Url('a+b')).toBeUndefined();
    expect(fromBase64Url('abcde')).toBeUndefined();
  });
});

describe('RFC 9162 multiproof (one joint inclusion proof, docs/API.md#proving-the-log)', () => {
  /** The leaf sets each test tree is proven for: the named kinds, then every subset of a small tree. */
  function leafSets(n: number): number[][] {
    const all = Array.from({ length: n }, (_, i) => i);
    const sets = [
      all,
      [0],
      [n - 1],
      [Math.floor(n / 2)],
      all.slice(Math.floor(n / 3), Math.floor((2 * n) / 3) + 1), // contiguous
      all.filter((i) => i % 7 === 3 || i === n - 1), // scattered, last leaf
      all.filter((i) => i % 3 === 0), // scattered, first leaf
    ];
    if (n <= 9) for (let mask = 1; mask < 2 ** n; mask++) sets.push(all.filter((i) => mask & (2 ** i)));
    return sets.filter((set) => set.length > 0);
  }

  it('when leaf sets of trees of 1 to 40, 100 and 1000 leaves are proven, then the supplied hashes are the definition and lead to the root', () => {
    let proven = 0;
    for (const n of [...Array.from({ length: 40 }, (_, i) => i + 1), 100, 1000]) {
      const d = leavesOf(n);
      const tree = treeOf(d);
      const root = hex(mth(d));
      for (const listed of leafSets(n)) {
        const nodes = multiproofRanges(listed, n).map(([start, end]) => tree.rangeHash(start, end));
        expect({ n, listed, nodes: nodes.map(hex) }).toEqual({
          n,
          listed,
          nodes: multiproof(listed, d).map(hex),
        });
        const leafHashes = listed.map((m) => merkleHasher.leafHash(d[m]!));
        expect({ n, listed, root: hex(merkleHasher.multiproofRoot(n, listed, leafHashes, nodes)!) }).toEqual({
          n,
          listed,
          root,
        });
        proven++;
      }
    }
    expect(proven).toBeGreaterThan(1000);
  });

  it('when a node or a leaf hash is changed, a node added or dropped, or the leaves misnumbered, then the root is not reached', () => {
    const n = 37;
    const d = leavesOf(n);
    const tree = treeOf(d);
    const root = hex(tree.root(n));
    const listed = [2, 3, 4, 17, 30, 36];
    const nodes = multiproofRanges(listed, n).map(([start, end]) => tree.rangeHash(start, end));
    const leafHashes = listed.map((m) => merkleHasher.leafHash(d[m]!));
    const rootOf = (l: number[], h: Uint8Array[], x: Uint8Array[], size = n) => {
      const r = merkleHasher.multiproofRoot(size, l, h, x);
      return r && hex(r);
    };
    expect(rootOf(listed, leafHashes, nodes)).toBe(root);
    const flip = (b: Uint8Array) => Uint8Array.from(b, (v, i) => (i === 0 ? v ^ 1 : v));
    for (let i = 0; i < nodes.length; i++)
      expect(
        rootOf(
          listed,
          leafHashes,
          nodes.map((x, j) => (j === i ? flip(x) : x)),
        ),
      ).not.toBe(root);
    for (let i = 0; i < leafHashes.length; i++)
      expect(
        rootOf(
          listed,
          leafHashes.map((x, j) => (j === i ? flip(x) : x)),
          nodes,
        ),
      ).not.toBe(root);
    expect(rootOf(listed, leafHashes, nodes.slice(1))).toBeUndefined();
    expect(rootOf(listed, leafHashes, [...nodes, nodes[0]!])).toBeUndefined();
    expect(rootOf([2, 3, 4, 17, 30, 35], leafHashes, nodes)).not.toBe(root);
    expect(rootOf([3, 2, 4, 17, 30, 36], leafHashes, nodes)).toBeUndefined();
    expect(rootOf(listed, leafHashes.slice(1), nodes)).toBeUndefined();
    expect(rootOf(listed, leafHashes, nodes, 38)).not.toBe(root);
    expect(() => multiproofRanges([5, 5], n)).toThrow(RangeError);
    expect(() => multiproofRanges([n], n)).toThrow(RangeError);
  });

  it('when consecutive leaves are proven, then the hashes supplied grow with the gaps, not the leaves', () => {
    const n = 12_000;
    const listed = Array.from({ length: 3000 }, (_, i) => 4000 + i);
    // Each maximal gap is at most two spines of log2(n) ranges.
    expect(multiproofRanges(listed, n).length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(n)));
  });
});
