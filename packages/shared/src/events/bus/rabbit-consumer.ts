import type { Span } from '@opentelemetry/api';
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { AuditEvent } from '../events';
import type { Logger } from '../../observability/logger';
import { processMetrics, type QueueDepthSource } from '../../observability/metrics';
import { withTimeout } from '../outbox/relay';
import { redactUrl } from '../../core/redact-url';
import { serviceUnavailable } from '../../core/errors';
import { endSpan, startConsumeSpan } from '../../observability/tracing';
import { parseEventMessage } from './encoding';
import { ReconnectingConsumer } from './reconnecting-consumer';
import { assertTopology, bindWebhookRoutes, type AmqpTopology } from './topology';
import type { BatchHandler, BatchOptions, EventHandler, EventSource } from './types';

/** How long a scrape waits for the audit queue's depth (docs/DEPLOYMENT.md, "Metrics"). */
const QUEUE_DEPTH_TIMEOUT_MS = 1_000;

export interface RabbitSourceOptions {
  url: string;
  logger: Logger;
  topology?: AmqpTopology;
  prefetch?: number;
  /** Delay before a message whose handler failed (a store outage, not bad input) is offered again. */
  retryDelayMs?: number;
  /** The queue consumed (declared by assertTopology); defaults to the audit queue. */
  queue?: 'audit' | 'webhooks';
  /**
   * The webhook queue only: the event types endpoints subscribe to ("*": every type), bound at
   * every connect before consuming (bindWebhookRoutes). Absent: every type.
   */
  routes?: () => Promise<readonly string[]>;
}

/** One AMQP delivery and the events of it that still wait for their write. */
interface Delivery {
  channel: Channel;
  msg: ConsumeMessage;
  /** Valid events of the message not yet written. */
  remaining: number;
  /** A write (or dead-lettering) of it failed: it is nacked for redelivery, never acked. */
  failed: boolean;
  /** Acked or nacked already (a second ack of a tag would close the channel). */
  settled: boolean;
  /** Its invalid elements, republished to the dead-letter exchange; resolves false if that failed. */
  deadLettered?: Promise<boolean>;
  /** The consumer span (tracing on): from receipt until the message is acked or requeued. */
  span?: Span;
}

/**
 * Consumes the audit queue. A message carries one event or a JSON array of events (see
 * `RabbitPublisher.publish`); each is validated with zod. A message that is not an event or an
 * array of them is rejected to the dead-letter queue (never requeued); the invalid elements of an
 * array are republished one by one to the dead-letter exchange with confirms, so they do not hold
 * up the valid ones. A message is acked only after all its valid events are written (and its
 * invalid ones dead-lettered); a failed write requeues it whole, and redeliveries are harmless
 * because the store keeps each event id once. Reconnects with backoff when the broker goes away.
 */
export class RabbitEventSource
  extends ReconnectingConsumer<BatchHandler>
  implements EventSource, QueueDepthSource
{
  private inFlight = new Set<Promise<void>>();
  private consumerTag?: string;

  constructor(private readonly options: RabbitSourceOptions) {
    super(options.logger, options.topology, {
      who: options.queue === 'webhooks' ? 'webhook consumer' : 'audit consumer',
      role: 'consumer',
    });
  }

  /** The queue this source consumes. */
  private get queue(): string {
    return this.options.queue === 'webhooks' ? this.topology.webhookQueue : this.topology.auditQueue;
  }

  /**
   * Starts consuming. If the broker is unreachable now, it keeps retrying in the background
   * (readiness says so) instead of failing the service's start.
   */
  async start(handler: EventHandler): Promise<void> {
    // One event per batch keeps the single-event contract: a message is acked after its events' writes.
    await this.startBatched(
      async (events) => {
        for (const event of events) await handler(event);
      },
      { maxBatch: 1, maxDelayMs: 0 },
    );
  }

  async startBatched(handler: BatchHandler, options: BatchOptions = {}): Promise<void> {
    // audit_queue_messages counts the audit queue only; the webhook backlog has gauges of its own.
    if (this.options.queue !== 'webhooks') processMetrics().queueSources.add(this);
    this.batchOptions = { maxBatch: options.maxBatch ?? 100, maxDelayMs: options.maxDelayMs ?? 20 };
    await this.connectOrRetry(handler);
  }

  private lastHandler?: BatchHandler;
  private batchOptions: Required<BatchOptions> = { maxBatch: 100, maxDelayMs: 20 };
  private pending: { delivery: Delivery; event: AuditEvent }[] = [];
  private flushTimer?: NodeJS.Timeout;

  protected async connect(handler: BatchHandler): Promise<void> {
    const { logger, url } = this.options;
    // The next node after one that went away (docs/CONFIGURATION.md, "Every service").
    const { connection, node } = await this.nodesOf(url).connect();
    const channel = await connection.createChannel();
    await assertTopology(channel, this.topology);
    if (this.options.queue === 'webhooks')
      await bindWebhookRoutes(channel, this.topology, (await this.options.routes?.()) ?? ['*']);
    await channel.prefetch(this.options.prefetch ?? 200);
    // Invalid elements of a batch message are republished here (confirmed) before the message is acked.
    const deadLetterChannel = await connection.createConfirmChannel();
    deadLetterChannel.on('error', (err) => logger.warn({ err }, 'amqp dead-letter channel error'));
    this.connection = connection;
    this.channel = channel;
    this.watch(connection, channel, handler);
    deadLetterChannel.on('close', () => {
      if (!this.stopped) void connection.close().catch(() => undefined);
    });
    this.lastHandler = handler;
    const { consumerTag } = await channel.consume(this.queue, (msg) => {
      if (!msg) return;
      const p = this.handle(channel, deadLetterChannel, msg, handler).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    });
    this.consumerTag = consumerTag;
    logger.info(
      { amqp: redactUrl(node), queue: this.queue },
      `${this.options.queue === 'webhooks' ? 'webhook' : 'audit'} consumer connected to RabbitMQ`,
    );
  }

  /** Validates one delivery; invalid ones are dead-lettered at once, valid events join the current batch. */
  private async handle(
    channel: Channel,
    deadLetterChannel: ConfirmChannel,
    msg: ConsumeMessage,
    handler: BatchHandler,
  ): Promise<void> {
    const parsed = parseEventMessage(msg.content);
    const span = startConsumeSpan(
      msg.properties.headers,
      this.queue,
      msg.properties.messageId,
      parsed?.events.length ?? 0,
    );
    if (!parsed || parsed.events.length === 0) {
      const err = parsed?.invalid[0]?.error;
      this.options.logger.warn(
        { err, messageId: msg.properties.messageId },
        'invalid audit message dead-lettered',
      );
      channel.nack(msg, false, false);
      processMetrics().auditDeadLetters.inc({ kind: 'message' });
      endSpan(span, 'invalid audit message dead-lettered');
      return;
    }
    const delivery: Delivery = {
      channel,
      msg,
      remaining: parsed.events.length,
      failed: false,
      settled: false,
      span,
    };
    if (parsed.invalid.length > 0) {
      delivery.deadLettered = this.deadLetter(deadLetterChannel, msg, parsed.invalid);
      processMetrics().auditDeadLetters.inc({ kind: 'event' }, parsed.invalid.length);
    }
    for (const event of parsed.events) this.pending.push({ delivery, event });
    if (this.pending.length >= this.batchOptions.maxBatch) {
      const flushes: Promise<void>[] = [];
      while (this.pending.length >= this.batchOptions.maxBatch) flushes.push(this.flush(handler));
      await Promise.all(flushes);
    } else this.flushTimer ??= setTimeout(() => void this.trackFlush(handler), this.batchOptions.maxDelayMs);
  }

  /** Republishes the invalid elements of a batch message to the dead-letter exchange, confirmed. */
  private deadLetter(
    ch: ConfirmChannel,
    msg: ConsumeMessage,
    invalid: { element: unknown; error: unknown }[],
  ): Promise<boolean> {
    this.options.logger.warn(
      { err: invalid[0]!.error, count: invalid.length, messageId: msg.properties.messageId },
      'invalid events of an audit batch message dead-lettered',
    );
    return Promise.all(
      invalid.map(
        ({ element }) =>
          new Promise<void>((resolve, reject) => {
            try {
              ch.publish(
                this.topology.deadLetterExchange,
                '',
                Buffer.from(JSON.stringify(element)),
                {
                  persistent: true,
                  contentType: 'application/json',
                  headers: {
                    'x-original-routing-key': msg.fields.routingKey,
                    'x-original-message-id': msg.properties.messageId,
                    'x-dead-letter-reason': 'invalid audit event in a batch message',
                  },
                },
                (err) => (err ? reject(err) : resolve()),
              );
            } catch (err) {
              reject(err);
            }
          }),
      ),
    ).then(
      () => true,
      (err) => {
        this.options.logger.warn(
          { err, messageId: msg.properties.messageId },
          'dead-lettering failed; message will be redelivered',
        );
        return false;
      },
    );
  }

  private trackFlush(handler: BatchHandler): Promise<void> {
    const p = this.flush(handler).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
    return p;
  }

  /**
   * Writes one batch (at most maxBatch events, taken now), then acks every message whose events
   * are all written; a failed write requeues its messages after a pause (never dropped).
   */
  private async flush(handler: BatchHandler): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const batch = this.pending.splice(0, this.batchOptions.maxBatch);
    if (this.pending.length > 0 && !this.stopped)
      this.flushTimer = setTimeout(() => void this.trackFlush(handler), this.batchOptions.maxDelayMs);
    if (batch.length === 0) return;
    try {
      await handler(batch.map((b) => b.event));
    } catch (err) {
      this.options.logger.error(
        { err, size: batch.length },
        'audit batch write failed; messages will be redelivered',
      );
      const deliveries = new Set(batch.map((b) => b.delivery));
      for (const d of deliveries) d.failed = true;
      await new Promise((r) => setTimeout(r, this.options.retryDelayMs ?? 1_000));
      for (const d of deliveries) settle(d, 'requeue');
      return;
    }
    const done: Delivery[] = [];
    for (const { delivery } of batch) if (--delivery.remaining === 0) done.push(delivery);
    await Promise.all(
      done.map(async (d) => {
        if (d.failed || d.settled) return;
        if (d.deadLettered && !(await d.deadLettered)) return settle(d, 'requeue');
        settle(d, 'ack');
      }),
    );
  }

  /**
   * See EventSource.addRoutes: bound on a channel of its own, so a refusal never closes the
   * consuming one; on a connection of its own while the consumer is not connected (starting, or
   * reconnecting), and a broker that cannot be reached answers 503.
   */
  async addRoutes(eventTypes: readonly string[]): Promise<void> {
    if (this.options.queue !== 'webhooks') throw new Error('routes are the webhook queue’s only');
    let own: ChannelModel | undefined;
    try {
      const connection =
        this.connection ?? (own = (await this.nodesOf(this.options.url).connect()).connection);
      const ch = await connection.createChannel();
      ch.on('error', () => undefined);
      try {
        await assertTopology(ch, this.topology);
        await bindWebhookRoutes(ch, this.topology, eventTypes);
      } finally {
        await ch.close().catch(() => undefined);
      }
    } catch (err) {
      this.options.logger.warn({ err }, 'webhook queue routes not added');
      throw serviceUnavailable('The event broker is unreachable; try again');
    } finally {
      await own?.close().catch(() => undefined);
    }
  }

  /**
   * Messages ready in the audit queue (the `audit_queue_messages` gauge): a passive check on a
   * channel of its own, so a failed check never closes the consuming channel. Bounded
   * (docs/DEPLOYMENT.md, "Metrics"): a broker that accepts and never answers would otherwise hold
   * the whole scrape for as long as it hangs; the gauge then has no sample.
   */
  async queueDepth(): Promise<number | null> {
    const connection = this.connection;
    if (!connection || !this.channel) return null;
    const check = async () => {
      const ch = await connection.createChannel();
      ch.on('error', () => undefined);
      try {
        return (await ch.checkQueue(this.queue)).messageCount;
      } finally {
        await ch.close().catch(() => undefined);
      }
    };
    return withTimeout(check(), QUEUE_DEPTH_TIMEOUT_MS, 'audit queue depth');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    processMetrics().queueSources.delete(this);
    // No new deliveries from here on; what was delivered is written and acked below.
    if (this.channel && this.consumerTag) await this.channel.cancel(this.consumerTag).catch(() => undefined);
    // Until nothing is left: a batch timer that fires meanwhile starts one more tracked flush.
    while (this.inFlight.size > 0 || (this.pending.length > 0 && this.lastHandler)) {
      if (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
      // Whatever waits for its batch timer is written (and acked) before the connection closes.
      else await this.flush(this.lastHandler!);
    }
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await this.connection?.close().catch(() => undefined);
    this.connection = undefined;
    this.channel = undefined;
  }
}

function settle(d: Delivery, how: 'ack' | 'requeue'): void {
  if (d.settled) return;
  d.settled = true;
  endSpan(d.span, how === 'requeue' ? 'requeued for redelivery' : undefined);
  try {
    if (how === 'ack') d.channel.ack(d.msg);
    else d.channel.nack(d.msg, false, true);
  } catch {
    // The channel died meanwhile: the broker redelivers unacked messages, and the store ignores repeats.
  }
}
