/**
 * The one table of the dashboard's areas: the permission that shows an area in the navigation
 * (and opens its page) and the one that enables its changes. A permission of the signed-in
 * subject (GET /v1/me) is all that counts; the API enforces the same permissions again.
 */
export interface Area {
  id: string;
  path: string;
  label: string;
  read: string;
  write?: string;
}

export const TENANT_AREAS: Area[] = [
  { id: 'api-keys', path: '/api-keys', label: 'API keys', read: 'tenant:read', write: 'tenant:write' },
  { id: 'mandates', path: '/mandates', label: 'Mandates', read: 'mandates:read', write: 'mandates:write' },
  { id: 'verify', path: '/verify', label: 'Verification playground', read: 'verify' },
  { id: 'audit', path: '/audit', label: 'Audit log', read: 'events:read' },
  {
    id: 'access',
    path: '/access',
    label: 'Access management',
    read: 'tenant:read',
    write: 'tenant:write',
  },
  {
    id: 'widget',
    path: '/widget',
    label: 'Widget configuration',
    read: 'tenant:read',
    write: 'tenant:write',
  },
  { id: 'billing', path: '/billing', label: 'Billing', read: 'tenant:read' },
  { id: 'governance', path: '/governance', label: 'Governance', read: 'tenant:read' },
  { id: 'drift', path: '/drift', label: 'Drift monitoring', read: 'tenant:read', write: 'tenant:write' },
  { id: 'trust', path: '/trust', label: 'Trust operations', read: 'tenant:read' },
  { id: 'webhooks', path: '/webhooks', label: 'Webhooks', read: 'tenant:read', write: 'tenant:write' },
];

export const OPERATOR_AREAS: Area[] = [
  { id: 'operator', path: '/operator', label: 'Operator console', read: 'platform:*' },
];

export const allowedAreas = (permissions: readonly string[], areas: Area[] = TENANT_AREAS) =>
  areas.filter((a) => permissions.includes(a.read));
