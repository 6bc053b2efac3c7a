import { newId } from '@mandate/shared/core';
import { fromBase64Url, merkleHasher, toBase64Url } from '@mandate/shared/mandate';
import { logProofParts } from '../src/domain/log';
import { MemoryEventStore } from '../src/store/memory-event-store';
import { buildAuditEvent } from './factories';

/**
 * The evidence export's joint proof (docs/API.md#proving-the-log, "log_proof"), read from the
 * store a batch at a time: its leaf hashes are the stored leaves, in the events' order, and with
 * its nodes they lead to the root of the tree, whatever the sizes and seqs.
 */
async function collect(store: MemoryEventStore, tenant: string, seqs: (number | undefined)[], size: number) {
  const lists = { leaf_hashes: [] as string[], nodes: [] as string[] };
  let last: string | undefined;
  for await (const part of logProofParts(store, tenant, seqs, size)) {
    expect(last === 'nodes' && part.list === 'leaf_hashes').toBe(false);
    last = part.list;
    lists[part.list].push(...part.items.map((item) => JSON.parse(item) as string));
  }
  return lists;
}

describe('logProofParts', () => {
  it('when seqs of trees of 1 to 70 leaves and of 2,500 are proven (in order, out of order, with gaps, none or past the tree), then each leaf hash is the stored leaf and the nodes lead to the root', async () => {
    const store = new MemoryEventStore();
    const tenant = newId('tnt');
    let proven = 0;
    for (const size of [...Array.from({ length: 70 }, (_, i) => i + 1), 2500]) {
      while ((await store.logSize(tenant)) < size) await store.insert(buildAuditEvent(tenant));
      const all = Array.from({ length: size }, (_, i) => i + 1);
      const cases: (number | undefined)[][] = [
        all,
        [size],
        [1, undefined, size + 1],
        all.filter((seq) => seq % 5 !== 2),
        [...all.filter((seq) => seq % 2 === 0).reverse(), ...all.filter((seq) => seq % 3 === 1)],
      ];
      for (const seqs of cases) {
        const { leaf_hashes, nodes } = await collect(store, tenant, seqs, size);
        const expected = await Promise.all(
          seqs.map(async (seq) =>
            seq === undefined || seq > size
              ? null
              : toBase64Url((await store.logHashes(tenant, [[seq - 1, seq]]))[0]!),
          ),
        );
        expect({ size, seqs, leaf_hashes }).toEqual({ size, seqs, leaf_hashes: expected });
        const byLeaf = new Map(
          seqs.flatMap((seq, i) => (leaf_hashes[i] ? [[seq! - 1, leaf_hashes[i]!]] : [])),
        );
        const leaves = [...byLeaf.keys()].sort((a, b) => a - b);
        const root = merkleHasher.multiproofRoot(
          size,
          leaves,
          leaves.map((m) => fromBase64Url(byLeaf.get(m)!)!),
          nodes.map((n) => fromBase64Url(n)!),
        );
        const [stored] = await store.logHashes(tenant, [[0, size]]);
        expect({ size, seqs, root: root && toBase64Url(root) }).toEqual({
          size,
          seqs,
          root: toBase64Url(stored!),
        });
        proven++;
      }
    }
    expect(proven).toBe(71 * 5);
  });
});
