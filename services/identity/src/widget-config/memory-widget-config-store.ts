import type { AuditEvent, MemoryOutbox } from '@mandate/shared/events';
import { PerTenantDocument } from '../common/memory';
import type { WidgetConfig } from './widget';
import type { WidgetConfigStore } from './widget-config-store';

export class MemoryWidgetConfigStore implements WidgetConfigStore {
  private readonly widgets = new PerTenantDocument<WidgetConfig>();

  constructor(private readonly outbox: MemoryOutbox) {}

  async get(tenantId: string): Promise<WidgetConfig | null> {
    return this.widgets.get(tenantId);
  }

  async put(tenantId: string, config: WidgetConfig, outbox?: AuditEvent[]): Promise<void> {
    this.widgets.set(tenantId, config);
    this.outbox.add(`widget:${tenantId}`, outbox);
  }
}
