import { canonicalJson, newId } from '@mandate/shared/core';
import {
  AUDIT_CHECKPOINT_TYP,
  MemoryMerkleTree,
  inclusionRanges,
  mandateSigningPayload,
  merkleHasher,
  multiproofRanges,
  toBase64Url,
} from '@mandate/shared/mandate';
import { auditLeafBytes } from '@mandate/shared/browser';
import { verifyBundle } from '../src/verify';
import { makeKey, sealBundle, sign, type TestKey } from './keys';

/**
 * The three kinds of bundle the checker proves against the log (docs/API.md#proving-the-log): the
 * joint proof (`log_proof`), the per-event paths of bundles exported before it (`proofs`), none.
 */
const TREE_SIZE = 23;
/** The bundle's events' seqs: scattered, consecutive, the tree's last leaf; other tenants' leaves between. */
const SEQS = [3, 4, 5, 11, 23];

/** A signed bundle of five logged events, the tree they are leaves of, and its signed checkpoint. */
async function logged(key: TestKey) {
  const tenant = newId('tnt');
  const fields = {
    id: newId('mdt'),
    tenant_id: tenant,
    principal: { id: 'user_alice', type: 'person' },
    delegate: { id: 'agent_42', type: 'agent' },
    scope: { actions: ['payments:*'] },
    valid_from: null,
    expires_at: '2030-01-01T00:00:00.000Z',
    created_at: '2026-11-21T12:00:00.000Z',
  };
  const mandate = {
    ...fields,
    signature: { alg: 'ES256', kid: key.kid, jws: await sign(key, mandateSigningPayload(fields)) },
  };
  const events = SEQS.map((seq, i) => ({
    id: `evt_${i}`,
    tenant_id: tenant,
    type: 'VERIFICATION_PERFORMED',
    occurred_at: `2026-11-21T12:0${i}:00.000Z`,
    resource: { type: 'mandate', id: fields.id },
    data: { decision: 'ALLOW' },
    seq,
  }));
  const tree = new MemoryMerkleTree(merkleHasher);
  for (let seq = 1; seq <= TREE_SIZE; seq++) {
    const mine = events.find((e) => e.seq === seq);
    tree.append(
      mine
        ? merkleHasher.leafHash(auditLeafBytes(mine))
        : merkleHasher.leafHash(new TextEncoder().encode(`other ${seq}`)),
    );
  }
  const claims = {
    tenant_id: tenant,
    tree_size: TREE_SIZE,
    root_hash: toBase64Url(tree.root()),
    issued_at: '2026-11-21T13:00:00.000Z',
  };
  const checkpoint = { ...claims, jws: await sign(key, canonicalJson(claims), AUDIT_CHECKPOINT_TYP) };
  const bundle = await sealBundle(
    { mandate, exported_at: '2026-11-21T13:00:00.000Z', events, evidence_exports: 0, keys: [key.jwk] },
    key,
  );
  return { bundle, tree, checkpoint };
}

type Logged = Awaited<ReturnType<typeof logged>>;

/** The bundle as the audit service exports it now: one joint proof, each shared hash once. */
function withLogProof({ bundle, tree, checkpoint }: Logged) {
  const leaves = SEQS.map((seq) => seq - 1);
  return {
    ...bundle,
    checkpoint,
    log_proof: {
      leaf_hashes: leaves.map((m) => toBase64Url(tree.rangeHash(m, m + 1))),
      nodes: multiproofRanges(leaves, TREE_SIZE).map(([s, e]) => toBase64Url(tree.rangeHash(s, e))),
    },
  };
}

/** The bundle as exported before log_proof: an RFC 9162 inclusion path per event. */
function withPaths({ bundle, tree, checkpoint }: Logged) {
  const proofs = SEQS.map((seq) => ({
    seq,
    path: inclusionRanges(seq - 1, TREE_SIZE).map(([s, e]) => toBase64Url(tree.rangeHash(s, e))),
  }));
  return { ...bundle, checkpoint, proofs };
}

const flipHash = (h: string) => (h[0] === 'A' ? 'B' : 'A') + h.slice(1);

async function logResult(bundle: unknown) {
  const results = await verifyBundle(bundle);
  return results.find((r) => r.check === 'log proofs')!;
}

describe('mandate-evidence verify: the log proof (docs/API.md#proving-the-log)', () => {
  let key: TestKey;
  let sample: Logged;
  beforeAll(async () => {
    key = await makeKey();
    sample = await logged(key);
  });

  it('when a bundle carries the joint log_proof, then every check passes and the proof lists fewer hashes than the paths', async () => {
    const bundle = withLogProof(sample);
    const results = await verifyBundle(bundle, { trustedKeys: [key.jwk] });
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results.find((r) => r.check === 'log proofs')!.detail).toMatch(/every event \(5\).*multiproof/);
    const pathHashes = withPaths(sample).proofs.flatMap((p) => p.path).length;
    expect(bundle.log_proof.nodes.length + bundle.log_proof.leaf_hashes.length).toBeLessThan(pathHashes);
  });

  it('when a node of the log_proof is changed, dropped or added, then the proof fails naming the checkpoint', async () => {
    const bundle = withLogProof(sample);
    const nodes = bundle.log_proof.nodes;
    for (const changed of [
      nodes.map((n, i) => (i === 1 ? flipHash(n) : n)),
      nodes.slice(1),
      [...nodes, nodes[0]!],
    ]) {
      const result = await logResult({ ...bundle, log_proof: { ...bundle.log_proof, nodes: changed } });
      expect(result).toMatchObject({ ok: false });
      expect(result.detail).toMatch(/does not lead to the root of the checkpoint \(tree_size 23/);
    }
  });

  it('when a listed leaf hash or an event is changed, then the proof fails naming that event', async () => {
    const bundle = withLogProof(sample);
    const leafChanged = bundle.log_proof.leaf_hashes.map((h, i) => (i === 3 ? flipHash(h) : h));
    const byLeaf = await logResult({
      ...bundle,
      log_proof: { ...bundle.log_proof, leaf_hashes: leafChanged },
    });
    expect(byLeaf).toMatchObject({ ok: false });
    expect(byLeaf.detail).toMatch(
      /^event evt_3 \(position 4\) \(seq 11\) is not leaf 11 .*altered, moved or never logged/,
    );
    const events = bundle.events.map((e, i) => (i === 2 ? { ...e, data: { decision: 'DENY' } } : e));
    const byEvent = await logResult({ ...bundle, events });
    expect(byEvent.detail).toMatch(/^event evt_2 \(position 3\) \(seq 5\) is not leaf 5/);
    const swapped = bundle.events.map((e, i) =>
      i === 0 ? { ...e, seq: 4 } : i === 1 ? { ...e, seq: 3 } : e,
    );
    expect((await logResult({ ...bundle, events: swapped })).detail).toMatch(/^event evt_0 .*not leaf 4/);
  });

  it('when the log_proof is malformed or misaligned, then the proof fails saying how', async () => {
    const bundle = withLogProof(sample);
    const cases: [unknown, RegExp][] = [
      [[], /log_proof must be an object/],
      [{ ...bundle.log_proof, leaf_hashes: ['x'] }, /leaf_hashes must be a list of base64url/],
      [
        { ...bundle.log_proof, leaf_hashes: bundle.log_proof.leaf_hashes.slice(1) },
        /5 event\(s\) but 4 leaf hash/,
      ],
      [{ ...bundle.log_proof, nodes: 'x' }, /nodes must be a list/],
    ];
    for (const [log_proof, message] of cases)
      expect((await logResult({ ...bundle, log_proof })).detail).toMatch(message);
  });

  it('when a bundle carries the per-event proofs of before log_proof, then it still verifies; a changed path fails naming the event', async () => {
    const bundle = withPaths(sample);
    const results = await verifyBundle(bundle, { trustedKeys: [key.jwk] });
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(results.find((r) => r.check === 'log proofs')!.detail).toMatch(/a path per event/);
    const proofs = bundle.proofs.map((p, i) => (i === 4 ? { ...p, path: p.path.map(flipHash) } : p));
    expect((await logResult({ ...bundle, proofs })).detail).toMatch(
      /^event evt_4 \(position 5\) \(seq 23\) is not leaf 23/,
    );
  });

  it('when a bundle carries no log proof, then the check passes saying no log proof is present', async () => {
    const result = await logResult(sample.bundle);
    expect(result).toMatchObject({ ok: true });
    expect(result.detail).toMatch(/^no log proof present/);
  });
});
