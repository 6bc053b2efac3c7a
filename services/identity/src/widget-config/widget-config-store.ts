import type { AuditEvent } from '@mandate/shared/events';
import type { WidgetConfig } from './widget';

export interface WidgetConfigStore {
  /** null until the tenant saves one. */
  get(tenantId: string): Promise<WidgetConfig | null>;
  /** Replaces the whole configuration (PUT semantics), with its events in the same write. */
  put(tenantId: string, config: WidgetConfig, outbox?: AuditEvent[]): Promise<void>;
}
