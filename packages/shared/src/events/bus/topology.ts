import type { Channel } from 'amqplib';

/**
 * Every exchange, queue and routing key name in one place. The namespace lets tests run their
 * own isolated topology on the shared broker.
 */
export function amqpTopology(namespace = 'mandate') {
  return {
    /** Durable topic exchange every producer publishes audit events to. */
    exchange: `${namespace}.events`,
    /** Where messages the audit consumer rejects (invalid) are dead-lettered. */
    deadLetterExchange: `${namespace}.events.dlx`,
    /** The audit service's durable queue, bound to every event. */
    auditQueue: `${namespace}.audit.events`,
    /** Rejected messages rest here for inspection; nothing consumes them automatically. */
    auditDeadLetterQueue: `${namespace}.audit.events.dead`,
    /**
     * The webhook fan-out's durable queue: its own copy of each event of a type some endpoint
     * subscribes to (bindWebhookRoutes), not of every event.
     */
    webhookQueue: `${namespace}.webhooks.events`,
    routingKey: (eventType: string) => `audit.${eventType}`,
    allEvents: 'audit.#',
  };
}
export type AmqpTopology = ReturnType<typeof amqpTopology>;

/**
 * The audit queue and its dead-letter queue are quorum queues: replicated (Raft) on a cluster, and
 * fsync'd before the publisher's confirm on a single node too. RabbitMQ refuses to redeclare an
 * existing queue with another type (PRECONDITION_FAILED): docs/KUBERNETES.md says how to migrate.
 */
export const DURABLE_QUEUE_TYPE = 'quorum';

/** Declares the whole audit topology. Producers call it too, so no event is published into an unbound exchange. */
export async function assertTopology(ch: Channel, t: AmqpTopology): Promise<void> {
  await ch.assertExchange(t.exchange, 'topic', { durable: true });
  await ch.assertExchange(t.deadLetterExchange, 'fanout', { durable: true });
  await ch.assertQueue(t.auditQueue, {
    durable: true,
    arguments: { 'x-queue-type': DURABLE_QUEUE_TYPE, 'x-dead-letter-exchange': t.deadLetterExchange },
  });
  await ch.bindQueue(t.auditQueue, t.exchange, t.allEvents);
  // Declared by producers too; bound only to the types endpoints subscribe to (bindWebhookRoutes).
  await ch.assertQueue(t.webhookQueue, {
    durable: true,
    arguments: { 'x-queue-type': DURABLE_QUEUE_TYPE, 'x-dead-letter-exchange': t.deadLetterExchange },
  });
  await ch.assertQueue(t.auditDeadLetterQueue, {
    durable: true,
    arguments: { 'x-queue-type': DURABLE_QUEUE_TYPE },
  });
  await ch.bindQueue(t.auditDeadLetterQueue, t.deadLetterExchange, '');
}

/**
 * Routes the events of these types (or of every type, for "*") to the webhook queue, which gets
 * only what some endpoint subscribes to. Bindings are only ever added: a binding no endpoint needs
 * any more costs copies, never an event (docs/DECISIONS.md, "The webhook queue gets the subscribed
 * types").
 */
export async function bindWebhookRoutes(
  ch: Channel,
  t: AmqpTopology,
  eventTypes: readonly string[],
): Promise<void> {
  const keys = eventTypes.includes('*') ? [t.allEvents] : [...new Set(eventTypes)].map(t.routingKey);
  for (const key of keys) await ch.bindQueue(t.webhookQueue, t.exchange, key);
}
