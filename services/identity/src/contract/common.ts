import { labelText } from '@mandate/shared';
import { z } from 'zod';
import { SUBJECT_ID_MAX, SUBJECT_ID_PATTERN } from './wire';

// Schemas more than one aggregate uses.

export const timestamp = z.iso.datetime();

export const subjectIdSchema = labelText()
  .max(SUBJECT_ID_MAX)
  .regex(SUBJECT_ID_PATTERN, { message: 'must be wallet:<id>, dashboard:<id> or oidc:<provider>:<id>' });

export const tenantParams = z.object({ tenantId: z.string() });

/** A JWT caller's alternatives for reading a tenant's configuration: any of them suffices. */
export const TENANT_CONFIG_READ = ['tenants:admin', 'tenant:write', 'tenant:read'] as const;
/** A JWT caller's alternatives for changing a tenant's configuration: any of them suffices. */
export const TENANT_CONFIG_WRITE = ['tenants:admin', 'tenant:write'] as const;
