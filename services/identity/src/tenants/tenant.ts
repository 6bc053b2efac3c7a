import { AppError } from '@mandate/shared/core';
import type { Plan, TenantStatus } from '../contract/wire';
// Wire vocabulary: the contract's.
export { PLANS, TENANT_STATUSES, TENANT_NAME_MAX, type Plan, type TenantStatus } from '../contract/wire';

export interface Tenant {
  id: string;
  name: string;
  plan: Plan;
  status: TenantStatus;
  created_at: string;
}

export class TenantNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Tenant not found');
  }
}
