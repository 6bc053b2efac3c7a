import { decodeCursor, type Page } from '@mandate/shared/contract';

// What every list handler does around its use case: the query's window in, the page's views out.

/** A list query's window, as the use cases read it: the limit and the id the cursor names. */
export const pageWindow = (query: { limit: number; cursor?: string }) => ({
  limit: query.limit,
  after: decodeCursor(query.cursor),
});

/** A page of stored objects as a response body: each item through its view. */
export const pageView = <T, V>(page: Page<T>, view: (item: T) => V) => ({
  ...page,
  data: page.data.map(view),
});
