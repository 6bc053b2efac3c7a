export const PLANS = ['beta', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

export const TENANT_STATUSES = ['active'] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];

export interface Tenant {
  id: string;
  name: string;
  plan: Plan;
  status: TenantStatus;
  created_at: string;
}

export const TENANT_NAME_MAX = 200;
