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
    routingKey: (eventType: string) => `audit.${eventType}`,
    allEvents: 'audit.#',
  };
}
export type AmqpTopology = ReturnType<typeof amqpTopology>;
