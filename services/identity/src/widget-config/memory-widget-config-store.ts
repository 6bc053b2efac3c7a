import type { AuditEvent, MemoryOutbox } from '@mandate/shared';
import type { WidgetConfig } from './widget';
import type { WidgetConfigStore } from './widget-config-store';

export class MemoryWidgetConfigStore implements WidgetConfigStore {
  private readonly widgets = new Map<string, WidgetConfig>();

  constructor(private readonly outbox: MemoryOutbox) {}

  async get(tenantId: string): Promise<WidgetConfig | null> {
    const w = this.widgets.get(tenantId);
    return w ? structuredClone(w) : null;
  }

  async put(tenantId: string, config: WidgetConfig, outbox?: AuditEvent[]): Promise<void> {
    this.widgets.set(tenantId, structuredClone(config));
    this.outbox.add(`widget:${tenantId}`, outbox);
  }
}
