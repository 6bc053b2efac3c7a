import { newId } from '@mandate/shared/core';
import { slotAt } from '../src/status-lists/status-list';
import { mandateStoreAdapters, mandatesForSuite } from './support';

describe('slotAt', () => {
  it.each([1, 2, 5, 100, 4_097])(
    'when every slot of a list of %i is handed out, then each index is taken exactly once',
    (capacity) => {
      const taken = Array.from({ length: capacity }, (_, n) => slotAt('a-list-key', n, capacity));
      expect(new Set(taken).size).toBe(capacity);
      expect(taken.every((idx) => idx >= 0 && idx < capacity)).toBe(true);
    },
  );

  it('when a list has no key (opened before v4), then slots stay in sequence; another key gives another order', () => {
    expect([0, 1, 2].map((n) => slotAt(undefined, n, 100_000))).toEqual([0, 1, 2]);
    const order = (key: string) => [0, 1, 2, 3].map((n) => slotAt(key, n, 100_000));
    expect(order('k1')).not.toEqual(order('k2'));
  });
});

/**
 * docs/DECISIONS.md#status-lists-v3: slots are taken at random among a list's free slots, so a
 * tenant cannot count from its own indexes how many mandates other tenants created in between.
 */
describe.each(mandateStoreAdapters())('status list slots (v4, $name store)', (adapter) => {
  const svc = mandatesForSuite({}, adapter);

  it('when mandates are created one after another, then their indexes are distinct, in range and not in sequence', async () => {
    const tenantId = newId('tnt');
    const slots: { uri: string; idx: number }[] = [];
    for (let i = 0; i < 30; i++) {
      const created = await svc.call(tenantId, 'POST', '/v1/mandates', {
        principal: 'alice',
        delegate: 'bot',
      });
      expect(created.status).toBe(201);
      slots.push(created.body.status.status_list);
    }
    const indexes = slots.map((s) => s.idx);
    expect(new Set(indexes).size).toBe(indexes.length);
    for (const idx of indexes) expect(idx >= 0 && idx < 100_000).toBe(true);
    const next = indexes.filter(
      (idx, i) => i > 0 && slots[i]!.uri === slots[i - 1]!.uri && idx === indexes[i - 1]! + 1,
    );
    expect(next.length).toBeLessThan(3);
  });
});
