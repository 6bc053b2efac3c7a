import { newId } from '@mandate/shared/core';
import { inclusionRanges, toBase64Url } from '@mandate/shared/mandate';
import { InclusionPathCache, inclusionPaths } from '../src/domain/log';
import { MemoryEventStore } from '../src/store/memory-event-store';
import { buildAuditEvent } from './factories';

/**
 * The evidence export's batched paths (docs/API.md#proving-the-log) name each range by one number
 * and share encoded hashes across batches (the last range per depth): every path must still be
 * exactly the single proof's, in seq order or not.
 */
describe('inclusionPaths', () => {
  it('when every seq of trees of 1 to 130 leaves is proven in batches, then each path is the single proof of that seq', async () => {
    const store = new MemoryEventStore();
    const tenant = newId('tnt');
    let compared = 0;
    for (let size = 1; size <= 130; size++) {
      await store.insert(buildAuditEvent(tenant));
      const inOrder = Array.from({ length: size }, (_, i) => i + 1);
      // Out of order too: every other seq, then the rest backwards, a seq twice in a row.
      const mixed = [
        ...inOrder.filter((seq) => seq % 2 === 1),
        ...inOrder.filter((seq) => seq % 2 === 0).reverse(),
        size,
      ];
      for (const seqs of [inOrder, mixed]) {
        const cache = new InclusionPathCache();
        const batched = [
          ...(await inclusionPaths(store, tenant, seqs.slice(0, 50), size, cache)),
          ...(await inclusionPaths(store, tenant, seqs.slice(50), size, cache)),
        ];
        for (const [at, seq] of seqs.entries()) {
          const single = await store.logHashes(tenant, inclusionRanges(seq - 1, size));
          expect({ size, seq, path: batched[at] }).toEqual({ size, seq, path: single.map(toBase64Url) });
          compared++;
        }
      }
    }
    expect(compared).toBe(2 * ((130 * 131) / 2) + 130);
  });
});
