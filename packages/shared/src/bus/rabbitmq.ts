import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage } from 'amqplib';
import { auditEventSchema, type AuditEvent } from '../events';
import type { Logger } from '../logger';
import { amqpTopology, type AmqpTopology } from './topology';
import type { BatchHandler, BatchOptions, EventHandler, EventPublisher, EventSource } from './types';

/** Declares the whole audit topology. Producers call it too, so no event is published into an unbound exchange. */
export async function assertTopology(ch: Channel, t: AmqpTopology): Promise<void> {
  await ch.assertExchange(t.exchange, 'topic', { durable: true });
  await ch.assertExchange(t.deadLetterExchange, 'fanout', { durable: true });
  await ch.assertQueue(t.auditQueue, { durable: true, arguments: { 'x-dead-letter-exchange': t.deadLetterExchange } });
  await ch.bindQueue(t.auditQueue, t.exchange, t.allEvents);
  await ch.assertQueue(t.auditDeadLetterQueue, { durable: true });
  await ch.bindQueue(t.auditDeadLetterQueue, t.deadLetterExchange, '');
}

/** Where a URL points, without its credentials, for log lines. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable url)';
  }
}

/**
 * Publishes persistent messages on a confirm channel and resolves only when the broker has
 * confirmed them. Connects lazily and reconnects after a failure on the next publish.
 */
export class RabbitPublisher implements EventPublisher {
  readonly kind = 'rabbitmq' as const;
  private connecting?: Promise<ConfirmChannel>;
  private connection?: ChannelModel;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    private readonly topology: AmqpTopology = amqpTopology(),
  ) {}

  private channel(): Promise<ConfirmChannel> {
    if (this.closed) return Promise.reject(new Error('publisher closed'));
    if (!this.connecting) {
      this.connecting = (async () => {
        const connection = await amqp.connect(this.url);
        const reset = () => {
          this.connecting = undefined;
          this.connection = undefined;
        };
        connection.on('close', reset);
        connection.on('error', (err) => this.logger.warn({ err }, 'amqp publisher connection error'));
        const ch = await connection.createConfirmChannel();
        ch.on('error', (err) => this.logger.warn({ err }, 'amqp publisher channel error'));
        ch.on('close', reset);
        await assertTopology(ch, this.topology);
        this.connection = connection;
        this.logger.info({ amqp: redactUrl(this.url), exchange: this.topology.exchange }, 'event publisher connected to RabbitMQ');
        return ch;
      })();
      this.connecting.catch(() => {
        this.connecting = undefined;
      });
    }
    return this.connecting;
  }

  async publish(events: AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    const ch = await this.channel();
    await Promise.all(
      events.map(
        (event) =>
          new Promise<void>((resolve, reject) => {
            ch.publish(
              this.topology.exchange,
              this.topology.routingKey(event.type),
              Buffer.from(JSON.stringify(event)),
              { persistent: true, messageId: event.id, contentType: 'application/json', type: event.type },
              (err) => (err ? reject(err) : resolve()),
            );
          }),
      ),
    );
  }

  /** Connects now (instead of on first publish) so start-up fails loudly on a wrong URL. */
  async connect(): Promise<void> {
    await this.channel();
  }

  async close(): Promise<void> {
    this.closed = true;
    const connection = this.connection;
    this.connection = undefined;
    if (connection) await connection.close().catch(() => undefined);
  }
}

export interface RabbitSourceOptions {
  url: string;
  logger: Logger;
  topology?: AmqpTopology;
  prefetch?: number;
  /** Delay before a message whose handler failed (a store outage, not bad input) is offered again. */
  retryDelayMs?: number;
}

/**
 * Consumes the audit queue: each message is validated with zod; invalid ones are rejected to
 * the dead-letter queue (never requeued); valid ones are acked only after the handler's write.
 * Reconnects with backoff when the broker goes away.
 */
export class RabbitEventSource implements EventSource {
  readonly kind = 'rabbitmq' as const;
  private connection?: ChannelModel;
  private channel?: Channel;
  private stopped = false;
  private inFlight = new Set<Promise<void>>();
  private readonly topology: AmqpTopology;

  constructor(private readonly options: RabbitSourceOptions) {
    this.topology = options.topology ?? amqpTopology();
  }

  /** True while a channel is consuming; readiness checks report it. */
  get connected(): boolean {
    return this.channel !== undefined;
  }

  /**
   * Starts consuming. If the broker is unreachable now, it keeps retrying in the background
   * (readiness says so) instead of failing the service's start.
   */
  async start(handler: EventHandler): Promise<void> {
    // One event per batch keeps the single-event contract: each message is acked after its own write.
    await this.startBatched(async (events) => {
      for (const event of events) await handler(event);
    }, { maxBatch: 1, maxDelayMs: 0 });
  }

  async startBatched(handler: BatchHandler, options: BatchOptions = {}): Promise<void> {
    this.stopped = false;
    this.batchOptions = { maxBatch: options.maxBatch ?? 100, maxDelayMs: options.maxDelayMs ?? 20 };
    try {
      await this.connect(handler);
    } catch (err) {
      this.options.logger.warn({ err }, 'audit consumer cannot reach RabbitMQ yet; retrying');
      void this.reconnect(handler);
    }
  }

  private lastHandler?: BatchHandler;
  private batchOptions: Required<BatchOptions> = { maxBatch: 100, maxDelayMs: 20 };
  private pending: { channel: Channel; msg: ConsumeMessage; event: AuditEvent }[] = [];
  private flushTimer?: NodeJS.Timeout;

  private async connect(handler: BatchHandler): Promise<void> {
    const { logger, url } = this.options;
    const connection = await amqp.connect(url);
    const channel = await connection.createChannel();
    await assertTopology(channel, this.topology);
    await channel.prefetch(this.options.prefetch ?? 200);
    this.connection = connection;
    this.channel = channel;
    connection.on('error', (err) => logger.warn({ err }, 'amqp consumer connection error'));
    connection.on('close', () => {
      this.channel = undefined;
      if (!this.stopped) void this.reconnect(handler);
    });
    // A channel can die alone (e.g. a protocol error); closing the connection funnels that into the one reconnect path.
    channel.on('error', (err) => logger.warn({ err }, 'amqp consumer channel error'));
    channel.on('close', () => {
      this.channel = undefined;
      if (!this.stopped) void connection.close().catch(() => undefined);
    });
    this.lastHandler = handler;
    await channel.consume(this.topology.auditQueue, (msg) => {
      if (!msg) return;
      const p = this.handle(channel, msg, handler).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    });
    logger.info({ amqp: redactUrl(url), queue: this.topology.auditQueue }, 'audit consumer connected to RabbitMQ');
  }

  private async reconnect(handler: BatchHandler): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      await new Promise((r) => setTimeout(r, Math.min(200 * 2 ** attempt, 5_000)));
      if (this.stopped) return;
      try {
        await this.connect(handler);
        return;
      } catch (err) {
        this.options.logger.warn({ err, attempt }, 'audit consumer reconnect failed');
      }
    }
  }

  /** Validates one delivery; invalid ones are dead-lettered at once, valid ones join the current batch. */
  private async handle(channel: Channel, msg: ConsumeMessage, handler: BatchHandler): Promise<void> {
    let event: AuditEvent;
    try {
      event = auditEventSchema.parse(JSON.parse(msg.content.toString('utf8')));
    } catch (err) {
      this.options.logger.warn({ err, messageId: msg.properties.messageId }, 'invalid audit message dead-lettered');
      channel.nack(msg, false, false);
      return;
    }
    this.pending.push({ channel, msg, event });
    if (this.pending.length >= this.batchOptions.maxBatch) await this.flush(handler);
    else this.flushTimer ??= setTimeout(() => void this.trackFlush(handler), this.batchOptions.maxDelayMs);
  }

  private trackFlush(handler: BatchHandler): Promise<void> {
    const p = this.flush(handler).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
    return p;
  }

  /** Writes one batch, then acks it; a failed write is offered again after a pause (never dropped). */
  private async flush(handler: BatchHandler): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    try {
      await handler(batch.map((b) => b.event));
      for (const { channel, msg } of batch) {
        try {
          channel.ack(msg);
        } catch {
          // The channel died after the write: the broker redelivers, and the store ignores the repeat.
        }
      }
    } catch (err) {
      this.options.logger.error({ err, size: batch.length }, 'audit batch write failed; messages will be redelivered');
      await new Promise((r) => setTimeout(r, this.options.retryDelayMs ?? 1_000));
      for (const { channel, msg } of batch) {
        try {
          channel.nack(msg, false, true);
        } catch {
          // The channel closed meanwhile; the broker redelivers unacked messages by itself.
        }
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([...this.inFlight]);
    // Whatever waits for its batch timer is written (and acked) before the connection closes.
    if (this.pending.length > 0 && this.lastHandler) await this.flush(this.lastHandler);
    await this.connection?.close().catch(() => undefined);
    this.connection = undefined;
    this.channel = undefined;
  }
}
