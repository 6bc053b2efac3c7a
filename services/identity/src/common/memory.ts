import { SortedById } from '@mandate/shared';

const same = (id: string): string => id;

/** The ids sorted in `indexes` under `value` (created empty on first use). */
export function sortedIds<K>(indexes: Map<K, SortedById<string>>, value: K): SortedById<string> {
  let index = indexes.get(value);
  if (!index) indexes.set(value, (index = new SortedById(same)));
  return index;
}

export const newSortedIds = (): SortedById<string> => new SortedById(same);
