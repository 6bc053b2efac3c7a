import { type AuditEvent } from '@mandate/shared/events';
import { queryShapesOf, type MongoQueryShape, type StoredAs } from '@mandate/shared/data';
import { Schema } from 'mongoose';
import { CollectionStore, identitySchema, indexOutbox, iso } from '../common/mongo';
import type { WidgetConfig } from './widget';
import type { WidgetConfigStore } from './widget-config-store';

export interface WidgetDoc extends StoredAs<WidgetConfig, never, 'updated_at'> {
  tenant_id: string;
  /** Set by every put: only a saved configuration is stored. */
  updated_at: Date;
}

export const widgetSchema = identitySchema<WidgetDoc>(
  'widget_configs',
  {
    tenant_id: { type: String, required: true },
    allowed_origins: { type: [String], required: true },
    theme: { type: Schema.Types.Mixed, default: {} },
    locale: { type: String, default: null },
    updated_at: { type: Date, required: true },
  },
  { minimize: false },
);
// get, put (upsert): { tenant_id }; one configuration per tenant.
widgetSchema.index({ tenant_id: 1 }, { unique: true });
indexOutbox(widgetSchema);

const shapes = queryShapesOf('widget_configs');

/** Every query below, for the index-coverage test. */
export const WIDGET_CONFIG_QUERY_SHAPES: MongoQueryShape[] = [
  shapes.find('widgetConfigs.get / put', ['tenant_id']),
];

export class MongoWidgetConfigStore
  extends CollectionStore<WidgetDoc, WidgetConfig>
  implements WidgetConfigStore
{
  get(tenantId: string): Promise<WidgetConfig | null> {
    return this.findOneOut({ tenant_id: tenantId });
  }

  async put(tenantId: string, config: WidgetConfig, outbox?: AuditEvent[]): Promise<void> {
    await this.upsertWithEvents(
      { tenant_id: tenantId },
      {
        allowed_origins: config.allowed_origins,
        theme: config.theme,
        locale: config.locale,
        updated_at: new Date(config.updated_at ?? Date.now()),
      },
      outbox,
    );
  }

  protected out(d: WidgetDoc): WidgetConfig {
    const theme: WidgetConfig['theme'] = {};
    if (d.theme?.primary_color !== undefined) theme.primary_color = d.theme.primary_color;
    if (d.theme?.logo_url !== undefined) theme.logo_url = d.theme.logo_url;
    return {
      allowed_origins: [...d.allowed_origins],
      theme,
      locale: d.locale ?? null,
      updated_at: iso(d.updated_at),
    };
  }
}
