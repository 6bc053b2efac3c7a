import { newId, type CallerContext } from '@mandate/shared/core';
import { type Page } from '@mandate/shared/contract';
import { readPage } from '../common/store';
import { API_KEY_SCOPES } from '../api-keys/api-key';
import { createApiKey, type IssuedKey } from '../api-keys/api-keys';
import { nowIso, recordedEvent, relay, type IdentityDeps } from '../common/deps';
import { assignRoles } from '../role-assignments/role-assignments';
import type { RoleAssignment } from '../role-assignments/roles';
import { TenantNotFound, type Plan, type Tenant } from './tenant';

export const INITIAL_KEY_NAME = 'Initial key';

export interface CreatedTenant {
  tenant: Tenant;
  issued: IssuedKey;
  assignment: RoleAssignment | null;
}

/**
 * A platform operator creates a tenant with an initial all-scope key and, optionally, a
 * tenant_admin for the given subject. The writes are sequential (no transaction): the new
 * tenant has no other rows, so only an infrastructure failure can interrupt it.
 */
export async function createTenant(
  deps: IdentityDeps,
  input: {
    name: string;
    plan: Plan;
    adminSubjectId?: string;
    /** Set by an onboarding approval, which records the id before the tenant exists. */
    id?: string;
  },
  caller?: CallerContext,
): Promise<CreatedTenant> {
  const tenant: Tenant = {
    id: input.id ?? newId('tnt'),
    name: input.name,
    plan: input.plan,
    status: 'active',
    created_at: nowIso(deps),
  };
  const events = [
    recordedEvent(
      deps,
      {
        type: 'TENANT_CREATED',
        tenantId: tenant.id,
        resource: { type: 'tenant', id: tenant.id },
        data: { ...tenant },
      },
      caller,
    ),
  ];
  // Each event rides on the document whose change it records (tenant, key, assignment).
  await deps.store.tenants.insert(tenant, events);
  await relay(deps, events);
  const issued = await createApiKey(
    deps,
    tenant.id,
    { name: INITIAL_KEY_NAME, scopes: [...API_KEY_SCOPES] },
    caller,
  );
  const assignment =
    input.adminSubjectId === undefined
      ? null
      : await assignRoles(
          deps,
          tenant.id,
          { subjectId: input.adminSubjectId, roles: ['tenant_admin'] },
          caller,
        );
  return { tenant, issued, assignment };
}

export async function getTenant(deps: IdentityDeps, tenantId: string): Promise<Tenant> {
  const tenant = await deps.store.tenants.get(tenantId);
  if (!tenant) throw new TenantNotFound();
  return tenant;
}

/** The platform's tenants, newest first (the operator console). */
export async function listTenants(
  deps: IdentityDeps,
  options: { limit: number; after?: string },
): Promise<Page<Tenant>> {
  return readPage(
    options,
    (window) => deps.store.tenants.list(window),
    (t) => t.id,
  );
}
