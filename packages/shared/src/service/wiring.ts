import type { Express } from 'express';
import type { Connection } from 'mongoose';
import { InProcessBus, RabbitPublisher, amqpTopology, type EventPublisher } from '../events/bus';
import { compose } from './composition';
import { configError } from '../core/config';
import { internalTokens, type InternalTokens } from '../core/internal-token';
import type { Logger } from '../observability/logger';
import { connectMongo } from '../data/mongo';
import type { OutboxRelay } from '../events/outbox';
import { appLifecycle, type AppLifecycle, type BackgroundTask } from '../http/server';
import { SyncedClock, type TimeSource } from '../data/synced-clock';
import { systemClock, type Clock } from '../core/time';

/**
 * The building blocks a service's wire() shares with the others: what it built is closed by
 * close() (or when wiring fails half-way), last built first; what the caller passed in never is.
 */
export class Closers {
  private readonly closers: (() => Promise<void>)[] = [];

  add(close: () => Promise<void>): void {
    this.closers.push(close);
  }

  /** Closes in reverse order of creation; a failure goes to onError and the others still close. */
  async closeAll(onError: (err: unknown) => void = () => undefined): Promise<void> {
    for (const close of this.closers.reverse()) await close().catch(onError);
  }
}

/** What a service's wire() answers: its deps and how to close what it built for them. */
export interface Wired<D> {
  deps: D;
  close(): Promise<void>;
}

/** A service's wire(): its adapters by the composition rule, overrides from the embedded launcher or a test. */
export type Wire<C, D, O = Partial<D>> = (config: C, logger: Logger, overrides?: O) => Promise<Wired<D>>;

/**
 * Runs `build` with a fresh Closers: when it throws, what it had built is closed before the error
 * goes on; else close() closes it all (a failure to close goes to onCloseError).
 */
export async function wireWith<D>(
  build: (closers: Closers) => Promise<D>,
  onCloseError?: (err: unknown) => void,
): Promise<Wired<D>> {
  const closers = new Closers();
  try {
    const deps = await build(closers);
    return { deps, close: () => closers.closeAll(onCloseError) };
  } catch (err) {
    await closers.closeAll();
    throw err;
  }
}

/**
 * Tokens by the composition rule: keyed by INTERNAL_TOKEN_SECRET when it is set, else the
 * override, else none — the secret is then required.
 */
export function tokensFor(
  secret: string | undefined,
  override: InternalTokens | undefined,
  missing = 'is required (the same value in every service; e.g. openssl rand -hex 32)',
): InternalTokens {
  if (secret) return internalTokens(secret);
  if (override) return override;
  throw configError('INTERNAL_TOKEN_SECRET', missing);
}

/** The logger and clock a service runs with: the overrides' (a test's fixed clock), else the wiring's logger and the system clock. */
export function loggerAndClock(
  overrides: { logger?: Logger; clock?: Clock },
  logger: Logger,
): { logger: Logger; clock: Clock } {
  return { logger: overrides.logger ?? logger, clock: overrides.clock ?? systemClock };
}

/**
 * The clock a service decides time on: the override's (a test's fixed clock), else Redis's when the
 * service reads Redis (`source`: its own connection's `TIME`), synced now and every 10 s and
 * stopped on close, so that replicas on hosts whose clocks differ decide expiry and validity alike
 * (docs/DECISIONS.md, "Time"); else the system clock.
 */
export async function decisionClock(
  override: Clock | undefined,
  source: TimeSource | undefined,
  c: { logger: Logger; closers: Closers; what: string },
): Promise<Clock> {
  if (override) return override;
  if (!source) return systemClock;
  const clock = new SyncedClock(source, c.logger);
  await clock.start(c.what);
  c.closers.add(() => clock.stop());
  return clock;
}

/** The store by the composition rule: MongoDB when MONGO_URL is set, else the override, else `local`. */
export async function composeMongoStore<T>(c: {
  config: { MONGO_URL?: string; MONGO_DB: string };
  logger: Logger;
  closers: Closers;
  create(connection: Connection): T | Promise<T>;
  override: T | undefined;
  local(): T;
}): Promise<T> {
  const { adapter } = await compose<T>({
    variable: c.config.MONGO_URL,
    fromVariable: async (url) => {
      const connection = await connectMongo(url, c.config.MONGO_DB, c.logger);
      c.closers.add(() => connection.close());
      return c.create(connection);
    },
    override: c.override,
    local: c.local,
  });
  return adapter;
}

/**
 * The event publisher by the composition rule: RabbitMQ when AMQP_URL is set, else the override
 * (embedded mode passes its shared bus), else a private in-process bus (`localWarning` logged).
 */
export async function composeEventPublisher(c: {
  config: { AMQP_URL?: string; AMQP_NAMESPACE: string };
  logger: Logger;
  closers: Closers;
  override: EventPublisher | undefined;
  localWarning?: string;
}): Promise<EventPublisher> {
  const { adapter } = await compose<EventPublisher>({
    variable: c.config.AMQP_URL,
    fromVariable: async (url) => {
      const rabbit = new RabbitPublisher(url, c.logger, amqpTopology(c.config.AMQP_NAMESPACE));
      c.closers.add(() => rabbit.close());
      await rabbit.connect();
      return rabbit;
    },
    override: c.override,
    local: () => {
      const bus = new InProcessBus(c.logger);
      c.closers.add(() => bus.close());
      if (c.localWarning) c.logger.warn(c.localWarning);
      return bus;
    },
  });
  return adapter;
}

/**
 * A service whose writes keep their events in an outbox: its store, and the publisher its relay
 * drains that outbox to, each by the composition rule (composeMongoStore, then composeEventPublisher).
 * The memory store's data dies with the process, which is logged; `busWarning`, when given, is
 * logged when the events go to a private in-process bus.
 */
export async function composeStoreAndPublisher<T>(
  service: string,
  context: {
    config: { MONGO_URL?: string; MONGO_DB: string; AMQP_URL?: string; AMQP_NAMESPACE: string };
    logger: Logger;
    closers: Closers;
  },
  overrides: { store?: T; publisher?: EventPublisher },
  adapters: { mongo(connection: Connection): Promise<T>; memory(): T },
  busWarning?: string,
): Promise<{ store: T; publisher: EventPublisher }> {
  const store = await composeMongoStore<T>({
    ...context,
    create: adapters.mongo,
    override: overrides.store,
    local: () => {
      context.logger.warn(`${service}: in-memory store (no MONGO_URL); data is lost on restart`);
      return adapters.memory();
    },
  });
  const publisher = await composeEventPublisher({
    ...context,
    override: overrides.publisher,
    localWarning: busWarning,
  });
  return { store, publisher };
}

/**
 * The start()/stop() of an app whose writes keep their events in an outbox, with `relay`, its own
 * relay (none when the deps came with one): stopped last, after `tasks`, so what the requests
 * stored is relayed now if the broker allows, else after the next start.
 */
export function outboxAppLifecycle(
  app: Express,
  relay: OutboxRelay | undefined,
  tasks: readonly (BackgroundTask | undefined)[],
): { app: Express; relay: OutboxRelay | undefined } & AppLifecycle {
  return { app, relay, ...appLifecycle(app, [...tasks, relay]) };
}
