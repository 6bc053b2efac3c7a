/**
 * The one composition rule of every service's wiring.ts and of the embedded launcher:
 *
 *   1. the variable wins (AMQP_URL, MONGO_URL, REDIS_URL, MANDATES_URL, …): set, its adapter is built;
 *   2. else the override (the embedded launcher's shared bus, a test's double);
 *   3. else the local default (memory store, private in-process bus, no Redis).
 *
 * The variable comes first because it is what the operator asked for: `npm start` with AMQP_URL
 * must publish to RabbitMQ, not into the launcher's in-process bus that no other process reads.
 */
export type Chosen = 'variable' | 'override' | 'default';

export interface Composition<T, V> {
  /** The variable's parsed value; undefined when unset. */
  variable: V | undefined;
  /** Builds the adapter the variable names (and registers whatever must be closed). */
  fromVariable(value: V): T | Promise<T>;
  /** Passed by the caller; never closed by the wiring that receives it. */
  override?: T;
  /** Built only when neither the variable nor an override is given. */
  local(): T | Promise<T>;
}

/** Applies the rule; `chosen` tells the wiring which it took (only an override is not its to close). */
export async function compose<T, V = string>(c: Composition<T, V>): Promise<{ adapter: T; chosen: Chosen }> {
  if (c.variable !== undefined) return { adapter: await c.fromVariable(c.variable), chosen: 'variable' };
  if (c.override !== undefined) return { adapter: c.override, chosen: 'override' };
  return { adapter: await c.local(), chosen: 'default' };
}
