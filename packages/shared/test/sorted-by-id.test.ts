import { SortedById, newestFirstOf, takeMatching } from '../src/core/sorted-by-id';

const same = (id: string) => id;
const filled = (ids: string[]) => {
  const index = new SortedById(same);
  for (const id of ids) index.insert(id);
  return index;
};

describe('SortedById', () => {
  it('when ids arrive in any order, then they are walked in id order both ways, each once', () => {
    const index = filled(['c', 'a', 'e', 'b', 'd']);
    expect(index.insert('c')).toBe(false);
    expect(index.size).toBe(5);
    expect([...index.newestFirst()]).toEqual(['e', 'd', 'c', 'b', 'a']);
    expect([...index.oldestFirst()]).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('when a cursor is given, then only ids strictly beyond it follow, whether it is stored or not', () => {
    const index = filled(['b', 'd', 'f']);
    expect([...index.newestFirst('d')]).toEqual(['b']);
    expect([...index.newestFirst('e')]).toEqual(['d', 'b']);
    expect([...index.newestFirst('a')]).toEqual([]);
    expect([...index.newestFirst('z')]).toEqual(['f', 'd', 'b']);
    expect([...index.oldestFirst('d')]).toEqual(['f']);
    expect([...index.oldestFirst('c')]).toEqual(['d', 'f']);
  });

  it('when an id is removed or replaced, then only that entry changes', () => {
    const index = new SortedById((r: { id: string; v: number }) => r.id);
    for (const id of ['a', 'b', 'c']) index.insert({ id, v: 1 });
    expect(index.remove('b')).toBe(true);
    expect(index.remove('b')).toBe(false);
    expect(index.replace({ id: 'c', v: 2 })).toBe(true);
    expect(index.replace({ id: 'x', v: 2 })).toBe(false);
    expect([...index.newestFirst()]).toEqual([
      { id: 'c', v: 2 },
      { id: 'a', v: 1 },
    ]);
  });

  it('when several indexes are merged, then their ids come newest first below the cursor', () => {
    const merged = newestFirstOf(
      [filled(['a', 'd', 'g']), filled(['b', 'e']), filled([]), filled(['c', 'f'])],
      same,
      'f',
    );
    expect([...merged]).toEqual(['e', 'd', 'c', 'b', 'a']);
  });

  it('when taking matching items, then reading stops at the count', () => {
    let read = 0;
    const counted = (id: string) => (read++, id !== 'd');
    expect(takeMatching(filled(['a', 'b', 'c', 'd', 'e']).newestFirst(), counted, 2)).toEqual(['e', 'c']);
    expect(read).toBe(3);
    expect(takeMatching(['a'], () => true, 0)).toEqual([]);
  });
});
