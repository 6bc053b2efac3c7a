import { mountContracts } from '@mandate/shared/http';
import { Router } from 'express';
import { accessBaselineHandlers } from '../access-baselines/http';
import { apiKeyHandlers, apiKeyInternalHandlers } from '../api-keys/http';
import { credentialChangeInternalHandlers } from '../credential-changes/http';
import type { Deps } from '../deps';
import { onboardingHandlers } from '../onboarding/http';
import { roleAssignmentHandlers, roleAssignmentInternalHandlers } from '../role-assignments/http';
import { tenantHandlers } from '../tenants/http';
import { widgetConfigHandlers } from '../widget-config/http';

// Each aggregate's routes live next to it (`<aggregate>/http.ts`: its views and handlers); this file
// only mounts them. One mountContracts call per surface, so a path's 405 lists all its methods.

/** The public routes (/v1) of tenants, API keys, role assignments, widget, access baseline and onboarding. */
export function publicRoutes(deps: Deps): Router {
  const r = Router();
  mountContracts(r, [
    ...tenantHandlers(deps),
    ...apiKeyHandlers(deps),
    ...roleAssignmentHandlers(deps),
    ...widgetConfigHandlers(deps),
    ...accessBaselineHandlers(deps),
    ...onboardingHandlers(deps),
  ]);
  return r;
}

/** The internal routes (/internal/v1) the gateway resolves its callers with. */
export function gatewayInternalRoutes(deps: Deps): Router {
  const r = Router();
  mountContracts(r, [
    ...apiKeyInternalHandlers(deps),
    ...roleAssignmentInternalHandlers(deps),
    ...credentialChangeInternalHandlers(deps),
  ]);
  return r;
}
