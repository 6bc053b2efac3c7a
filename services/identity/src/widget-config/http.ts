import { callerOf, implement, type Implementation } from '@mandate/shared/http';
import { pick } from '../http/view';
import { routes } from '../contract';
import type { Deps } from '../deps';
import { pathTenant } from '../http/tenancy';
import type { WidgetConfig } from './widget';
import { getWidgetConfig, putWidgetConfig } from './widget-config';

/** The one place a stored widget configuration becomes a response body. */
export const widgetConfigView = (w: WidgetConfig) =>
  pick(w, ['allowed_origins', 'theme', 'locale', 'updated_at']);

export const widgetConfigHandlers = (deps: Deps): Implementation[] => [
  implement(routes.getWidgetConfig)(async (_input, req) => ({
    status: 200,
    body: widgetConfigView(await getWidgetConfig(deps, pathTenant(req))),
  })),
  implement(routes.putWidgetConfig)(async ({ body }, req) => {
    const tenantId = pathTenant(req);
    const value = await putWidgetConfig(deps, tenantId, body, callerOf(req));
    return { status: 200, body: widgetConfigView(value) };
  }),
];
