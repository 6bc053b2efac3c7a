import { toPage, type Page } from '@mandate/shared';

export interface ListOptions {
  /** How many items to return at most (callers ask for limit + 1 to learn has_more). */
  limit: number;
  /** Only items with an id below this one (ids sort by creation, so this pages newest first). */
  before?: string;
}

/**
 * One page of a store's newest-first list: `list` is asked for one item more than `limit` (so the
 * page knows whether another follows), below the cursor's id, with the filter as given.
 */
export async function listPage<T, F extends object>(
  list: (options: ListOptions & F) => Promise<T[]>,
  { limit, after, ...filter }: { limit: number; after?: string } & F,
  idOf: (item: T) => string,
): Promise<Page<T>> {
  return toPage(await list({ ...(filter as F), limit: limit + 1, before: after }), limit, idOf);
}
