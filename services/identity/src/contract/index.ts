/**
 * The identity service's public contract, one module per aggregate (the wire vocabulary is
 * ./wire): request and response schemas and routes. The package's entry point. Only zod and the
 * shared kernel here.
 */
import { accessBaselineRoutes } from './access-baselines';
import { apiKeyRoutes } from './api-keys';
import { identityVerificationRoutes } from './identity-verifications';
import { onboardingRoutes } from './onboarding';
import { roleRoutes } from './roles';
import { tenantRoutes } from './tenants';
import { widgetRoutes } from './widget';

export * from './wire';
export * from './common';
export * from './tenants';
export * from './api-keys';
export * from './roles';
export * from './widget';
export * from './onboarding';
export * from './identity-verifications';
export * from './access-baselines';
export * from './internal';
export * from './wallet-protocol';

export const routes = {
  ...tenantRoutes,
  ...apiKeyRoutes,
  ...roleRoutes,
  ...widgetRoutes,
  ...onboardingRoutes,
  ...identityVerificationRoutes,
  ...accessBaselineRoutes,
};

export const contract = Object.values(routes);
export * from './credential-changes';
