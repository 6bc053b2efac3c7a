import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage } from 'amqplib';
import { auditEventSchema, type AuditEvent } from '../events';
import type { Logger } from '../logger';
import { amqpTopology, type AmqpTopology } from './topology';
import type { EventHandler, EventPublisher, EventSource } from './types';

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
    this.stopped = false;
    try {
      await this.connect(handler);
    } catch (err) {
      this.options.logger.warn({ err }, 'audit consumer cannot reach RabbitMQ yet; retrying');
      void this.reconnect(handler);
    }
  }

  private async connect(handler: EventHandler): Promise<void> {
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
    await channel.consume(this.topology.auditQueue, (msg) => {
      if (!msg) return;
      const p = this.handle(channel, msg, handler).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    });
    logger.info({ amqp: redactUrl(url), queue: this.topology.auditQueue }, 'audit consumer connected to RabbitMQ');
  }

  private async reconnect(handler: EventHandler): Promise<void> {
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

  private async handle(channel: Channel, msg: ConsumeMessage, handler: EventHandler): Promise<void> {
    let event: AuditEvent;
    try {
      event = auditEventSchema.parse(JSON.parse(msg.content.toString('utf8')));
    } catch (err) {
      this.options.logger.warn({ err, messageId: msg.properties.messageId }, 'invalid audit message dead-lettered');
      channel.nack(msg, false, false);
      return;
    }
    try {
      await handler(event);
      channel.ack(msg);
    } catch (err) {
      this.options.logger.error({ err, eventId: event.id }, 'audit handler failed; message will be redelivered');
      await new Promise((r) => setTimeout(r, this.options.retryDelayMs ?? 1_000));
      try {
        channel.nack(msg, false, true);
      } catch {
        // The channel closed meanwhile; the broker redelivers unacked messages by itself.
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([...this.inFlight]);
    await this.connection?.close().catch(() => undefined);
    this.connection = undefined;
    this.channel = undefined;
  }
}
