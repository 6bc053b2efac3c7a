import { labelText } from '@mandate/shared/core';
import { routeGroup } from '@mandate/shared/contract';
import { z } from 'zod';
import { SUBJECT_ID_MAX, SUBJECT_ID_PATTERN, type Permission } from './wire';

// Schemas more than one aggregate uses.

export const timestamp = z.iso.datetime();

export const subjectIdSchema = labelText()
  .max(SUBJECT_ID_MAX)
  .regex(SUBJECT_ID_PATTERN, { message: 'must be wallet:<id>, dashboard:<id> or oidc:<provider>:<id>' });

/** A JWT caller's alternatives for reading a tenant's configuration: any of them suffices. */
export const TENANT_CONFIG_READ = [
  'tenants:admin',
  'tenant:write',
  'tenant:read',
] as const satisfies readonly Permission[];
/** A JWT caller's alternatives for changing a tenant's configuration: any of them suffices. */
export const TENANT_CONFIG_WRITE = ['tenants:admin', 'tenant:write'] as const satisfies readonly Permission[];

/** The platform operator's routes (operator token, /v1/platform/*). */
export const platformRoutes = routeGroup({ service: 'identity', auth: 'operator', tags: ['platform'] });

/** A tenant's own routes, called with an API key of scope tenants:admin or a JWT of the tenant. */
export const TENANT_ADMIN_ROUTE = { service: 'identity', auth: 'tenant', scope: 'tenants:admin' } as const;

/**
 * The routes of one part of a tenant's configuration, under one tag: `reads` take any of
 * TENANT_CONFIG_READ from a JWT caller, `writes` any of TENANT_CONFIG_WRITE.
 */
export function tenantConfigRoutes<const T extends string>(tag: T) {
  return {
    reads: routeGroup({ ...TENANT_ADMIN_ROUTE, tags: [tag], permissions: TENANT_CONFIG_READ }),
    writes: routeGroup({ ...TENANT_ADMIN_ROUTE, tags: [tag], permissions: TENANT_CONFIG_WRITE }),
  };
}
