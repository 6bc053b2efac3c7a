import { createHash } from 'node:crypto';

/**
 * Fields that change without a request changing anything: the outbox (events waiting to be
 * relayed, drained in the background after a successful write) and a key's last_used_at (touched
 * by any authenticated call, by design).
 */
const IGNORED_FIELDS = new Set(['outbox', 'last_used_at', 'spool']);

/** A canonical, comparable form of a memory store's contents (its own fields, Maps and Sets included). */
export function canonical(value: unknown, seen = new Set<unknown>()): unknown {
  if (value === null || typeof value !== 'object') return typeof value === 'function' ? undefined : value;
  if (seen.has(value)) return '[cycle]';
  seen.add(value);
  try {
    if (value instanceof Map) {
      return {
        map: [...value.entries()]
          .map(([k, v]) => [String(k), canonical(v, seen)])
          .sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
      };
    }
    if (value instanceof Set)
      return { set: [...value].map((v) => JSON.stringify(canonical(v, seen))).sort() };
    if (value instanceof Date) return value.toISOString();
    if (Array.isArray(value)) return value.map((v) => canonical(v, seen));
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      if (IGNORED_FIELDS.has(key)) continue;
      out[key] = canonical((value as Record<string, unknown>)[key], seen);
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

export const contentHash = (store: object) =>
  createHash('sha256')
    .update(JSON.stringify(canonical(store)))
    .digest('hex');

const READ_ONLY = /^(get|list|find|ping|pending|count|has|read|resolve|check|health)/i;

/**
 * Wraps every method of a store instance that is not a read, so a test knows whether anything
 * may have written since it last looked — the full content hash is only computed then. A store
 * composed of stores (identity: one per aggregate) has the methods of its parts wrapped too.
 */
export function trackWrites(
  store: object,
  state: { dirty: boolean; calls: string[] } = { dirty: true, calls: [] },
): { dirty: boolean; calls: string[] } {
  const names = new Set<string>();
  for (
    let proto = Object.getPrototypeOf(store);
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    for (const name of Object.getOwnPropertyNames(proto)) names.add(name);
  }
  for (const name of names) {
    const original = (store as Record<string, unknown>)[name];
    if (name === 'constructor' || typeof original !== 'function' || READ_ONLY.test(name)) continue;
    (store as Record<string, unknown>)[name] = function (this: unknown, ...args: unknown[]) {
      state.dirty = true;
      state.calls.push(name);
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    };
  }
  for (const part of Object.values(store)) {
    if (part !== null && typeof part === 'object' && isStore(part)) trackWrites(part, state);
  }
  return state;
}

/** A class instance whose class ends in Store (not a Map, an index or an outbox of a store). */
const isStore = (value: object): boolean => /Store$/.test(value.constructor?.name ?? '');

/** Every audit event a memory event store holds, wherever in its fields they sit. */
export function collectEvents(store: object): { id: string; type: string; request_id: string | null }[] {
  const out: { id: string; type: string; request_id: string | null }[] = [];
  const visit = (v: unknown, depth: number) => {
    if (v === null || typeof v !== 'object' || depth > 4) return;
    if (v instanceof Map || v instanceof Set || Array.isArray(v)) {
      for (const x of v instanceof Map ? v.values() : v) visit(x, depth + 1);
      return;
    }
    const o = v as Record<string, unknown>;
    if (typeof o.id === 'string' && typeof o.type === 'string' && 'request_id' in o) {
      out.push({ id: o.id, type: o.type, request_id: (o.request_id as string | null) ?? null });
      return;
    }
    for (const x of Object.values(o)) visit(x, depth + 1);
  };
  visit(store, 0);
  return out;
}
