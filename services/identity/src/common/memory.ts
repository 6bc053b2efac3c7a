import { SortedById } from '@mandate/shared';

const same = (id: string): string => id;

/** The ids sorted in `indexes` under `value` (created empty on first use). */
export function sortedIds<K>(indexes: Map<K, SortedById<string>>, value: K): SortedById<string> {
  let index = indexes.get(value);
  if (!index) indexes.set(value, (index = new SortedById(same)));
  return index;
}

export const newSortedIds = (): SortedById<string> => new SortedById(same);

/** One document per tenant (its configuration), held as copies: no caller shares the stored object. */
export class PerTenantDocument<T> {
  private readonly docs = new Map<string, T>();

  get(tenantId: string): T | null {
    const doc = this.docs.get(tenantId);
    return doc ? structuredClone(doc) : null;
  }

  set(tenantId: string, doc: T): void {
    this.docs.set(tenantId, structuredClone(doc));
  }
}
