import type { CallerContext } from '@mandate/shared/core';
import { nowIso, type IdentityDeps } from '../common/deps';
import { saveTenantSetting } from '../common/tenant-settings';
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
  await saveTenantSetting(
    deps,
    tenantId,
    { type: 'WIDGET_CONFIG_UPDATED', resource: 'widget_config', data: { ...config } },
    (events) => deps.store.widgetConfigs.put(tenantId, config, events),
    caller,
  );
  return config;
}
