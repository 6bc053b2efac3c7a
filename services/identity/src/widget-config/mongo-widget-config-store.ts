import { queryShapesOf, type AuditEvent, type MongoQueryShape } from '@mandate/shared';
import { Schema, type Model } from 'mongoose';
import { HIDDEN, identitySchema, indexOutbox, iso, pushOutbox, type WithOutbox } from '../common/mongo';
import type { WidgetConfig } from './widget';
import type { WidgetConfigStore } from './widget-config-store';

export interface WidgetDoc extends WithOutbox {
  tenant_id: string;
  allowed_origins: string[];
  theme: { primary_color?: string; logo_url?: string };
  locale: string | null;
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

function widgetOut(d: WidgetDoc): WidgetConfig {
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

export class MongoWidgetConfigStore implements WidgetConfigStore {
  constructor(private readonly widgets: Model<WidgetDoc>) {}

  async get(tenantId: string): Promise<WidgetConfig | null> {
    const d = await this.widgets.findOne({ tenant_id: tenantId }, HIDDEN).lean<WidgetDoc>();
    return d ? widgetOut(d) : null;
  }

  async put(tenantId: string, config: WidgetConfig, outbox?: AuditEvent[]): Promise<void> {
    await this.widgets.updateOne(
      { tenant_id: tenantId },
      {
        $set: {
          allowed_origins: config.allowed_origins,
          theme: config.theme,
          locale: config.locale,
          updated_at: new Date(config.updated_at ?? Date.now()),
        },
        ...pushOutbox(outbox),
      },
      { upsert: true },
    );
  }
}
