import type { Schema } from 'mongoose';
import type { MongoQueryShape } from '../data/mongo';

/** One index as mongoose declares it: keys in order, and its options. */
export interface DeclaredIndex {
  collection: string;
  keys: [string, number][];
  partialFilterExpression?: Record<string, unknown>;
}

/**
 * Every index the schemas declare (`schema.indexes()`), plus the `_id` index MongoDB always has.
 * `schemas` maps collection name → schema.
 */
export function declaredIndexes(schemas: Record<string, Schema>): DeclaredIndex[] {
  const out: DeclaredIndex[] = [];
  for (const [collection, schema] of Object.entries(schemas)) {
    out.push({ collection, keys: [['_id', 1]] });
    for (const [fields, options] of schema.indexes()) {
      out.push({
        collection,
        keys: Object.entries(fields).map(([f, d]) => [f, Number(d)]),
        partialFilterExpression: (options as { partialFilterExpression?: Record<string, unknown> })
          .partialFilterExpression,
      });
    }
  }
  return out;
}

const sameSet = (a: string[], b: string[]) => a.length === b.length && a.every((f) => b.includes(f));

/**
 * True when the index's leading keys are exactly the shape's equality fields (any order), then its
 * sort fields in order (all directions as declared or all reversed), then its range fields.
 * A partial index counts only when the query's equality fields include every field of its filter
 * (taken as an equality on the values it holds).
 */
export function indexServes(index: DeclaredIndex, shape: MongoQueryShape): boolean {
  if (index.collection !== shape.collection) return false;
  let equality = [...new Set(shape.equality)];
  if (index.partialFilterExpression) {
    const fixed = Object.keys(index.partialFilterExpression);
    if (!fixed.every((f) => equality.includes(f))) return false;
    // The index holds only documents with those values: the query's equality on them is already met.
    equality = equality.filter((f) => !fixed.includes(f) || index.keys.some(([k]) => k === f));
  }
  // A sort on a field fixed by equality orders nothing.
  const sort = Object.entries(shape.sort ?? {}).filter(([f]) => !equality.includes(f));
  const range = (shape.range ?? []).filter((f) => !equality.includes(f) && !sort.some(([s]) => s === f));
  const keys = index.keys;
  if (keys.length < equality.length + sort.length + range.length) return false;
  let at = 0;
  if (
    !sameSet(
      keys.slice(at, at + equality.length).map(([f]) => f),
      equality,
    )
  )
    return false;
  at += equality.length;
  const sortKeys = keys.slice(at, at + sort.length);
  const forward = sortKeys.every(([f, d], i) => f === sort[i]![0] && d === sort[i]![1]);
  const backward = sortKeys.every(([f, d], i) => f === sort[i]![0] && d === -sort[i]![1]);
  if (!forward && !backward) return false;
  at += sort.length;
  return sameSet(
    keys.slice(at, at + range.length).map(([f]) => f),
    range,
  );
}

/** The shapes no declared index serves, each with why, for one readable assertion. */
export function uncoveredQueries(indexes: DeclaredIndex[], shapes: MongoQueryShape[]): string[] {
  return shapes
    .filter((shape) => !indexes.some((index) => indexServes(index, shape)))
    .map(
      (s) =>
        `${s.collection}: ${s.query} (equality ${JSON.stringify(s.equality)}, sort ${JSON.stringify(s.sort ?? {})}, range ${JSON.stringify(s.range ?? [])})`,
    );
}
