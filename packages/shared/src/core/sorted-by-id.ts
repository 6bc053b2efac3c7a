/** The id of an index entry that is itself an id. */
export const plainId = (id: string): string => id;

/**
 * The in-memory stores' index: records kept sorted by id (ids sort by creation time), so a page
 * newest first behind a cursor is a binary search plus a walk of the page — O(log n + limit), where
 * a scan of a Map would be O(n) — and per-(tenant, filter value) instances serve filtered pages.
 *
 * Ids are created in increasing order, so an insert is normally an append; an id that arrives late
 * (several producers, a redelivery) is placed by binary search, moving only the records newer than
 * it (few, since late ids are recent ones). A removal moves the records after it the same way.
 */
export class SortedById<T> {
  private readonly items: T[] = [];

  constructor(private readonly idOf: (item: T) => string) {}

  /** Plain ids kept sorted (the memory stores' indexes, each id naming a record in a Map). */
  static ofIds(): SortedById<string> {
    return new SortedById(plainId);
  }

  /** The ids sorted in `indexes` under `value` (created empty on first use). */
  static idsUnder<K>(indexes: Map<K, SortedById<string>>, value: K): SortedById<string> {
    return valueFor(indexes, value, SortedById.ofIds);
  }

  get size(): number {
    return this.items.length;
  }

  /** Index of the first item whose id is >= id (items.length when none is). */
  private lowerBound(id: string): number {
    const { items, idOf } = this;
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (idOf(items[mid]!) < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** How many items have an id below `id`. */
  countBelow(id: string): number {
    return this.lowerBound(id);
  }

  /** Adds the item in id order; false (and no change) when an item with its id is already there. */
  insert(item: T): boolean {
    const { items, idOf } = this;
    const id = idOf(item);
    const last = items[items.length - 1];
    if (last === undefined || idOf(last) < id) {
      items.push(item);
      return true;
    }
    const at = this.lowerBound(id);
    if (at < items.length && idOf(items[at]!) === id) return false;
    items.splice(at, 0, item);
    return true;
  }

  /** Replaces the item with the same id (false when there is none). */
  replace(item: T): boolean {
    const at = this.lowerBound(this.idOf(item));
    if (at >= this.items.length || this.idOf(this.items[at]!) !== this.idOf(item)) return false;
    this.items[at] = item;
    return true;
  }

  remove(id: string): boolean {
    const at = this.lowerBound(id);
    if (at >= this.items.length || this.idOf(this.items[at]!) !== id) return false;
    this.items.splice(at, 1);
    return true;
  }

  /** Items with an id below `before` (all when undefined), newest first. */
  *newestFirst(before?: string): Generator<T, void, undefined> {
    const { items } = this;
    for (let i = (before === undefined ? items.length : this.lowerBound(before)) - 1; i >= 0; i--)
      yield items[i]!;
  }

  /** Items with an id above `after` (all when undefined), oldest first. */
  *oldestFirst(after?: string): Generator<T, void, undefined> {
    const { items } = this;
    let i = after === undefined ? 0 : this.lowerBound(after);
    if (after !== undefined && i < items.length && this.idOf(items[i]!) === after) i++;
    for (; i < items.length; i++) yield items[i]!;
  }
}

/**
 * Several indexes' items with an id below `before`, newest first, as one sequence: a k-way merge
 * (k is small: the values of one filter, e.g. a few event types). An item held by two of the
 * indexes comes twice; callers merge indexes that partition their records.
 */
export function newestFirstOf<T>(
  indexes: readonly SortedById<T>[],
  idOf: (item: T) => string,
  before?: string,
): Generator<T, void, undefined> {
  return mergeOf(
    indexes.map((index) => index.newestFirst(before)),
    idOf,
    (a, b) => a > b,
  );
}

/** As newestFirstOf, the other way: the items with an id above `after`, oldest first. */
export function oldestFirstOf<T>(
  indexes: readonly SortedById<T>[],
  idOf: (item: T) => string,
  after?: string,
): Generator<T, void, undefined> {
  return mergeOf(
    indexes.map((index) => index.oldestFirst(after)),
    idOf,
    (a, b) => a < b,
  );
}

/** The items of indexes past `cursor` by id: newest first (desc) or oldest first (asc), a ListOrder. */
export function inOrderOf<T>(
  indexes: readonly SortedById<T>[],
  idOf: (item: T) => string,
  order: 'asc' | 'desc',
  cursor?: string,
): Generator<T, void, undefined> {
  return order === 'asc' ? oldestFirstOf(indexes, idOf, cursor) : newestFirstOf(indexes, idOf, cursor);
}

/** Sorted sequences merged into one: each step takes the head whose id `comesFirst`. */
function* mergeOf<T>(
  cursors: Generator<T, void, undefined>[],
  idOf: (item: T) => string,
  comesFirst: (a: string, b: string) => boolean,
): Generator<T, void, undefined> {
  if (cursors.length === 1) {
    yield* cursors[0]!;
    return;
  }
  const heads = cursors.map((c) => c.next());
  for (;;) {
    let best = -1;
    for (let i = 0; i < heads.length; i++) {
      const head = heads[i]!;
      if (head.done) continue;
      if (best < 0 || comesFirst(idOf(head.value), idOf((heads[best] as IteratorYieldResult<T>).value)))
        best = i;
    }
    if (best < 0) return;
    yield (heads[best] as IteratorYieldResult<T>).value;
    heads[best] = cursors[best]!.next();
  }
}

/**
 * Up to `count` items of `items` that pass `matches`, in the order given; stops reading as soon
 * as it has them, so a page costs the items it looked at, never the whole sequence.
 */
export function takeMatching<T>(items: Iterable<T>, matches: (item: T) => boolean, count: number): T[] {
  const out: T[] = [];
  if (count <= 0) return out;
  for (const item of items) {
    if (!matches(item)) continue;
    out.push(item);
    if (out.length >= count) break;
  }
  return out;
}

/** The value under `key` in `map`, made by `create` and kept there on first use. */
export function valueFor<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = create()));
  return value;
}
