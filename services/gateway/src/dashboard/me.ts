import { z } from 'zod';
import { PLANS } from '@mandate/identity';
import type { Principal } from '../auth/authenticate';

/** GET /v1/me: the authenticated caller as the gateway established it (the dashboard's navigation). */
export const meSchema = z.object({
  tenant_id: z.string(),
  kind: z.enum(['api_key', 'user']),
  /** The JWT caller's canonical subject (`dashboard:…`, `oidc:<provider>:…`, `wallet:…`). */
  subject_id: z.string().optional(),
  /** The API key's id. */
  key_id: z.string().optional(),
  /** An API key's scopes, or the permissions of the subject's active role assignment. */
  permissions: z.array(z.string()),
  plan: z.enum(PLANS).optional(),
});
export type Me = z.infer<typeof meSchema>;

export function whoAmI(principal: Principal): Me {
  const { actor } = principal;
  return {
    tenant_id: principal.tenantId!,
    kind: actor.type === 'api_key' ? 'api_key' : 'user',
    ...(actor.subject_id ? { subject_id: actor.subject_id } : {}),
    ...(actor.key_id ? { key_id: actor.key_id } : {}),
    permissions: [...principal.permissions].sort(),
    ...(principal.plan ? { plan: principal.plan } : {}),
  };
}
