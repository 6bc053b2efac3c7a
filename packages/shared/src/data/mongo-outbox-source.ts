import type { Connection, Model } from 'mongoose';
import type { AuditEvent } from '../events/events';
import { markOutboxSent, pendingOutboxEvents, pingMongo, type OutboxDoc } from './mongo';

/**
 * What a service's Mongo store offers its outbox relay and its readiness check: the events pending
 * in the outboxes of `outboxModels` (read in that order, confirmed across all of them), and a ping
 * of its connection.
 */
export abstract class MongoOutboxSource {
  protected constructor(
    protected readonly connection: Connection,
    private readonly outboxModels: readonly Model<OutboxDoc>[],
  ) {}

  pendingEvents(limit: number): Promise<AuditEvent[]> {
    return pendingOutboxEvents(this.outboxModels, limit);
  }

  markSent(eventIds: string[]): Promise<void> {
    return markOutboxSent(this.outboxModels, eventIds);
  }

  ping(): Promise<void> {
    return pingMongo(this.connection);
  }
}
