import { newId } from '@mandate/shared/core';
import { inclusionRanges, toBase64Url } from '@mandate/shared/mandate';
import { inclusionPaths } from '../src/domain/log';
import { MemoryEventStore } from '../src/store/memory-event-store';
import { buildAuditEvent } from './factories';

/**
 * The evidence export's batched paths (docs/API.md#proving-the-log) name each range by one number
 * and share encoded hashes across batches: every path must still be exactly the single proof's.
 */
describe('inclusionPaths', () => {
  it('when every seq of trees of 1 to 130 leaves is proven in batches, then each path is the single proof of that seq', async () => {
    const store = new MemoryEventStore();
    const tenant = newId('tnt');
    let compared = 0;
    for (let size = 1; size <= 130; size++) {
      await store.insert(buildAuditEvent(tenant));
      const seqs = Array.from({ length: size }, (_, i) => i + 1);
      const shared = new Map<number, string>();
      const batched = [
        ...(await inclusionPaths(store, tenant, seqs.slice(0, 50), size, shared)),
        ...(await inclusionPaths(store, tenant, seqs.slice(50), size, shared)),
      ];
      for (const seq of seqs) {
        const single = await store.logHashes(tenant, inclusionRanges(seq - 1, size));
        expect({ size, seq, path: batched[seq - 1] }).toEqual({ size, seq, path: single.map(toBase64Url) });
        compared++;
      }
    }
    expect(compared).toBe((130 * 131) / 2);
  });
});
