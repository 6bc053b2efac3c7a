import { redactUrl } from '@mandate/shared/core';
import type { Logger } from '@mandate/shared/observability';
import {
  ReconnectingConsumer,
  assertTopology,
  parseEventMessage,
  type AmqpTopology,
  type EventHandler,
} from '@mandate/shared/events';

export interface RabbitSubscriberOptions {
  url: string;
  logger: Logger;
  topology?: AmqpTopology;
  /** Event types to receive (bound as their routing keys on the events exchange). */
  eventTypes: readonly string[];
  /** Who subscribes, for log lines. */
  name: string;
}

/**
 * A per-process view of some events: an exclusive, auto-delete, server-named queue bound to
 * chosen routing keys of the events exchange. Every process gets its own copy of each event
 * (fan-out to replicas, unlike the shared audit queue) and the queue disappears with the
 * process. Meant for cache invalidation: messages are not acknowledged one by one (noAck), a
 * message carries one event or an array of them, an event that fails validation is dropped with a warning, and events published while the
 * process is disconnected are not replayed, so users keep a TTL as the backstop.
 */
export class RabbitSubscriber extends ReconnectingConsumer<EventHandler> {
  constructor(private readonly options: RabbitSubscriberOptions) {
    super(options.logger, options.topology, {
      who: 'event subscriber',
      role: 'subscriber',
      context: { subscriber: options.name },
    });
  }

  /** Subscribes now; if the broker is unreachable, keeps retrying in the background. */
  async start(handler: EventHandler): Promise<void> {
    await this.connectOrRetry(handler);
  }

  protected async connect(handler: EventHandler): Promise<void> {
    const { logger, url, name } = this.options;
    // The next node after one that went away (docs/CONFIGURATION.md, "Every service").
    const { connection, node } = await this.nodesOf(url).connect();
    try {
      const channel = await connection.createChannel();
      await assertTopology(channel, this.topology);
      const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false });
      for (const type of this.options.eventTypes)
        await channel.bindQueue(queue, this.topology.exchange, this.topology.routingKey(type));
      this.watch(connection, channel, handler);
      await channel.consume(
        queue,
        (msg) => {
          if (!msg) return;
          // One event or a batch of them (RabbitPublisher sends a type's events of one batch together).
          const parsed = parseEventMessage(msg.content);
          if (!parsed || parsed.invalid.length > 0) {
            logger.warn(
              { err: parsed?.invalid[0]?.error, subscriber: name, messageId: msg.properties.messageId },
              parsed ? 'invalid events dropped' : 'invalid event dropped',
            );
          }
          for (const event of parsed?.events ?? []) {
            handler(event).catch((err) =>
              logger.error({ err, subscriber: name, eventId: event.id }, 'event handler failed'),
            );
          }
        },
        { noAck: true },
      );
      if (this.stopped) {
        // stop() ran while this connection was being made.
        await connection.close().catch(() => undefined);
        return;
      }
      this.connection = connection;
      this.channel = channel;
      logger.info(
        { amqp: redactUrl(node), subscriber: name, queue, events: this.options.eventTypes },
        'event subscriber connected to RabbitMQ',
      );
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const connection = this.connection;
    this.connection = undefined;
    this.channel = undefined;
    await connection?.close().catch(() => undefined);
  }
}
