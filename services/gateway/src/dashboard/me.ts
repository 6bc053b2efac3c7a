import type { z } from 'zod';
import type { meSchema } from '../contract';
import type { Principal } from '../auth/authenticate';

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
