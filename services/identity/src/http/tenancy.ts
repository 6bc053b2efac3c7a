import { callerOf, tenantOf } from '@mandate/shared/http';
import type { Request } from 'express';
import { OperatorRequired } from '../common/errors';
import { TenantNotFound } from '../tenants/tenant';

// The checks every aggregate's routes make of the caller before their use case.

/** The path's tenant must be the caller's: another tenant is indistinguishable from a missing one. */
export function pathTenant(req: Request): string {
  const tenantId = tenantOf(req);
  if (req.params.tenantId !== tenantId) throw new TenantNotFound();
  return tenantId;
}

/** The platform surface is the operator's alone, whatever the gateway let through. */
export function requireOperator(req: Request): void {
  if (callerOf(req).actor.type !== 'operator') throw new OperatorRequired();
}
