import { SortedById, valueFor } from '../core/sorted-by-id';

/**
 * A memory store's ids sorted, all of them and under each value of the fields its lists filter on
 * (the memory twin of a compound index), so a filtered page walks only ids that can match. `V`
 * names those fields and their types; a record's values are given once, when it is added, and a
 * field whose value changes is moved.
 */
export class FilterIndexes<V extends Record<string, unknown>> {
  readonly all = SortedById.ofIds();
  private readonly byField = new Map<keyof V, Map<unknown, SortedById<string>>>();

  add(id: string, values: V): void {
    this.all.insert(id);
    for (const field of Object.keys(values) as (keyof V)[])
      SortedById.idsUnder(this.field(field), values[field]).insert(id);
  }

  /** `id`'s `field` changed from `from` to `to`: it leaves the one and joins the other. */
  move<F extends keyof V>(id: string, field: F, from: V[F], to: V[F]): void {
    if (from === to) return;
    const indexes = this.field(field);
    indexes.get(from)?.remove(id);
    SortedById.idsUnder(indexes, to).insert(id);
  }

  /** The ids whose `field` is `value`; undefined while none has been. */
  under<F extends keyof V>(field: F, value: V[F]): SortedById<string> | undefined {
    return this.byField.get(field)?.get(value);
  }

  private field(field: keyof V): Map<unknown, SortedById<string>> {
    return valueFor(this.byField, field, () => new Map());
  }
}
