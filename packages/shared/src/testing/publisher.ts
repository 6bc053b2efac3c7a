import type { EventPublisher } from '../events/bus/types';
import { auditEventSchema, type AuditEvent } from '../events/events';

/**
 * Keeps every published event for assertions: each is checked against the event contract and
 * kept as a copy (later changes by the publisher's caller do not show). `failing` makes it throw
 * like a broker that is down.
 */
export class CapturingPublisher implements EventPublisher {
  readonly kind = 'in-process' as const;
  readonly events: AuditEvent[] = [];
  failing = false;

  async publish(events: AuditEvent[]): Promise<void> {
    if (this.failing) throw new Error('broker down');
    for (const event of events) {
      auditEventSchema.parse(event);
      this.events.push(structuredClone(event));
    }
  }

  async close(): Promise<void> {}

  forTenant(tenantId: string): AuditEvent[] {
    return this.events.filter((e) => e.tenant_id === tenantId);
  }

  ofResource(id: string): AuditEvent[] {
    return this.events.filter((e) => e.resource?.id === id);
  }
}
