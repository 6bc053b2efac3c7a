import { z } from 'zod';
import { badRequest } from './errors';

/** limit 1–100 (default 20) and an opaque cursor, shared by every list endpoint. */
export const listQueryShape = {
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(200).optional(),
};

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

const pages = new WeakMap<z.ZodType, z.ZodType>();

/**
 * A page of `item`s. When the item is a named schema (`.meta({ id: 'Mandate' })`), the page is
 * named after it (`MandatePage`), once: the OpenAPI document and generators then name it too.
 */
export function pageSchema<T extends z.ZodType>(item: T) {
  const page = z.object({ data: z.array(item), has_more: z.boolean(), next_cursor: z.string().nullable() });
  const id = z.globalRegistry.get(item)?.id;
  if (id === undefined) return page;
  const named = (pages.get(item) as typeof page | undefined) ?? page.meta({ id: `${id}Page` });
  pages.set(item, named);
  return named;
}

/**
 * Cursors carry the id of the last item returned. Ids sort by creation time, so "ids below the
 * cursor, descending" pages newest-first without skipping or repeating under concurrent inserts.
 */
export function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ after: lastId }), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof parsed.after === 'string' && /^[a-z]{3}_[0-9a-z]{26}$/.test(parsed.after)) return parsed.after;
  } catch {
    // fall through
  }
  throw badRequest('cursor is invalid');
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

/** Builds a page from up to limit+1 items fetched newest first. */
export function toPage<T>(itemsPlusOne: T[], limit: number, idOf: (item: T) => string): Page<T> {
  const data = itemsPlusOne.slice(0, limit);
  const hasMore = itemsPlusOne.length > limit;
  const last = data[data.length - 1];
  return { data, has_more: hasMore, next_cursor: hasMore && last ? encodeCursor(idOf(last)) : null };
}
