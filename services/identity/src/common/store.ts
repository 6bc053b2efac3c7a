import { toPage, type Page } from '@mandate/shared/contract';

export interface ListOptions {
  /** How many items to return at most (callers ask for limit + 1 to learn has_more). */
  limit: number;
  /** Only items with an id below this one (ids sort by creation, so this pages newest first). */
  before?: string;
}

/**
 * One page of a list read newest first: `read` is asked for one item more than `limit`, below the
 * cursor `after`, so the page knows whether another follows.
 */
export async function readPage<T>(
  { limit, after }: { limit: number; after?: string },
  read: (window: { limit: number; before: string | undefined }) => Promise<T[]>,
  idOf: (item: T) => string,
): Promise<Page<T>> {
  return toPage(await read({ limit: limit + 1, before: after }), limit, idOf);
}
