import type { ChannelModel, ConfirmChannel } from 'amqplib';
import type { AuditEvent } from '../events';
import type { Logger } from '../../observability/logger';
import { redactUrl } from '../../core/redact-url';
import { endSpan, startPublishSpan } from '../../observability/tracing';
import { AmqpNodes } from './amqp-nodes';
import { groupForMessages } from './encoding';
import { amqpTopology, assertTopology, type AmqpTopology } from './topology';
import type { EventPublisher } from './types';

/**
 * Publishes persistent messages on a confirm channel and resolves only when the broker has
 * confirmed them. Connects lazily and reconnects after a failure on the next publish.
 */
export class RabbitPublisher implements EventPublisher {
  readonly kind = 'rabbitmq' as const;
  private connecting?: Promise<ConfirmChannel>;
  private connection?: ChannelModel;
  private closed = false;
  private readonly nodes: AmqpNodes;
  /** Which connection is current: a replaced one's late close must not clear its successor. */
  private generation = 0;

  constructor(
    url: string,
    private readonly logger: Logger,
    private readonly topology: AmqpTopology = amqpTopology(),
  ) {
    this.nodes = new AmqpNodes(url);
  }

  private channel(): Promise<ConfirmChannel> {
    if (this.closed) return Promise.reject(new Error('publisher closed'));
    if (!this.connecting) {
      this.connecting = (async () => {
        // The next node after one that went away (docs/CONFIGURATION.md, "Every service").
        const { connection, node } = await this.nodes.connect();
        const generation = ++this.generation;
        const reset = () => {
          if (generation !== this.generation) return;
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
        this.logger.info(
          { amqp: redactUrl(node), exchange: this.topology.exchange },
          'event publisher connected to RabbitMQ',
        );
        return ch;
      })();
      this.connecting.catch(() => {
        this.connecting = undefined;
      });
    }
    return this.connecting;
  }

  /**
   * One persistent, confirmed message per event type in the batch (see "Message contract" in
   * docs/DECISIONS.md): a lone event is the event's JSON object, several are a JSON array of
   * events, routed by their type's key (`audit.<TYPE>`) so per-type subscribers still get them.
   * The broker's CPU goes per message, not per byte: a batch of 200 API_CALLs is one message.
   */
  async publish(events: AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    const ch = await this.channel();
    const connection = this.connection;
    const confirms: Promise<void>[] = [];
    for (const group of groupForMessages(events)) {
      const first = group[0]!;
      const body = group.length === 1 ? JSON.stringify(first) : JSON.stringify(group);
      const routingKey = this.topology.routingKey(first.type);
      // Tracing on: a producer span in the trace of the request that built the events, its traceparent in the headers.
      const traced = startPublishSpan(group, this.topology.exchange, routingKey, first.id);
      const headers =
        group.length > 1 || traced
          ? { ...traced?.headers, ...(group.length > 1 ? { 'x-event-count': group.length } : {}) }
          : undefined;
      confirms.push(
        new Promise<void>((resolve, reject) => {
          ch.publish(
            this.topology.exchange,
            routingKey,
            Buffer.from(body),
            {
              persistent: true,
              messageId: first.id,
              contentType: 'application/json',
              type: first.type,
              ...(headers ? { headers } : {}),
            },
            (err) => {
              endSpan(traced?.span, err ?? undefined);
              if (err) reject(err);
              else resolve();
            },
          );
        }),
      );
    }
    try {
      await Promise.all(confirms);
    } catch (err) {
      // A nack: the broker could not take the message through this channel. On a cluster, a
      // channel opened as a quorum queue's leader died can nack every publish after it; the next
      // publish opens a new connection, to the next node (docs/DEPLOYMENT.md, "On a RabbitMQ cluster").
      if (connection && this.connection === connection) {
        this.logger.warn({ err }, 'amqp publish nacked; reconnecting the publisher');
        this.generation++;
        this.connecting = undefined;
        this.connection = undefined;
        await connection.close().catch(() => undefined);
      }
      throw err;
    }
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
