import { z } from 'zod';
import { badRequest } from '../core/errors';

/** limit 1–100 (default 20) and an opaque cursor, shared by every list endpoint. */
export const listQueryShape = {
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional(),
};

/** Which way a list runs: `desc` newest first (the default), `asc` oldest first (docs/API.md, "Lists and paging"). */
export const LIST_ORDERS = ['asc', 'desc'] as const;
export type ListOrder = (typeof LIST_ORDERS)[number];

/**
 * The order and the opt-in total of a list route that offers them (docs/API.md, "Lists and paging"); added to
 * the route's query beside listQueryShape. A flag, spelled out: anything but true or false is a 400.
 */
export const listOrderShape = {
  order: z
    .enum(LIST_ORDERS)
    .default('desc')
    .describe(
      'desc: newest first (the default); asc: oldest first. A cursor keeps the order it was issued for',
    ),
  include_total: z
    .enum(['true', 'false'])
    .optional()
    .describe(
      'true: the answer also holds `total`, how many items the filters select (one more count query)',
    ),
};

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
  /** Only when asked for (`include_total=true`, on the routes that take it). */
  total?: number;
}

const pages = new WeakMap<z.ZodType, z.ZodType>();

/**
 * A page of `item`s. When the item is a named schema (`.meta({ id: 'Mandate' })`), the page is
 * named after it (`MandatePage`), once: the OpenAPI document and generators then name it too.
 */
export function pageSchema<T extends z.ZodType>(item: T) {
  const page = z.object({
    data: z.array(item),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
    total: z
      .int()
      .min(0)
      .optional()
      .describe('How many items the filters select, on every page: only with include_total=true'),
  });
  const id = z.globalRegistry.get(item)?.id;
  if (id === undefined) return page;
  const named = (pages.get(item) as typeof page | undefined) ?? page.meta({ id: `${id}Page` });
  pages.set(item, named);
  return named;
}

/**
 * Cursors carry the id of the last item returned. Ids sort by creation time, so "ids below the
 * cursor, descending" pages newest-first (and "ids above it, ascending" oldest-first) without
 * skipping or repeating under concurrent inserts. An oldest-first cursor also carries its order, so
 * it is never read the other way; a newest-first one is spelled as before the order existed.
 */
export function encodeCursor(lastId: string, order: ListOrder = 'desc'): string {
  const body = order === 'desc' ? { after: lastId } : { after: lastId, order };
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

/**
 * The id a cursor carries. Given the order the request asks for, a cursor issued for the other
 * order is a 400 (docs/API.md, "Lists and paging"): read the other way, it would skip or repeat items.
 */
export function decodeCursor(cursor: string | undefined, order?: ListOrder): string | undefined {
  if (cursor === undefined) return undefined;
  let parsed: { after?: unknown; order?: unknown } | undefined;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as typeof parsed;
  } catch {
    // fall through
  }
  const after = parsed?.after;
  const issuedFor = parsed?.order ?? 'desc';
  if (typeof after !== 'string' || !/^[a-z]{3}_[0-9a-z]{26}$/.test(after) || !isListOrder(issuedFor))
    throw badRequest('cursor is invalid');
  if (order !== undefined && issuedFor !== order)
    throw badRequest(`cursor was issued for order=${issuedFor}; ask with that order, or without the cursor`);
  return after;
}

const isListOrder = (value: unknown): value is ListOrder =>
  (LIST_ORDERS as readonly unknown[]).includes(value);

/** Builds a page from up to limit+1 items fetched in `order` (newest first unless told). */
export function toPage<T>(
  itemsPlusOne: T[],
  limit: number,
  idOf: (item: T) => string,
  order: ListOrder = 'desc',
): Page<T> {
  const data = itemsPlusOne.slice(0, limit);
  const hasMore = itemsPlusOne.length > limit;
  const last = data[data.length - 1];
  return { data, has_more: hasMore, next_cursor: hasMore && last ? encodeCursor(idOf(last), order) : null };
}
