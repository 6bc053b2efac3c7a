import type { CallerContext } from '@mandate/shared';
import { nowIso, recordedEvent, relay, type IdentityDeps } from '../common/deps';
import { DEFAULT_WIDGET_CONFIG, type WidgetConfig } from './widget';

export async function getWidgetConfig(deps: IdentityDeps, tenantId: string): Promise<WidgetConfig> {
  return (await deps.store.widgetConfigs.get(tenantId)) ?? structuredClone(DEFAULT_WIDGET_CONFIG);
}

export async function putWidgetConfig(
  deps: IdentityDeps,
  tenantId: string,
  input: Omit<WidgetConfig, 'updated_at'>,
  caller?: CallerContext,
): Promise<WidgetConfig> {
  const config: WidgetConfig = {
    allowed_origins: [...new Set(input.allowed_origins)],
    theme: input.theme,
    locale: input.locale,
    updated_at: nowIso(deps),
  };
  const events = [
    recordedEvent(
      deps,
      {
        type: 'WIDGET_CONFIG_UPDATED',
        tenantId,
        resource: { type: 'widget_config', id: tenantId },
        data: { ...config },
      },
      caller,
    ),
  ];
  await deps.store.widgetConfigs.put(tenantId, config, events);
  await relay(deps, events);
  return config;
}
