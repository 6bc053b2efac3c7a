import { useQuery } from '@tanstack/react-query';
import { apiOf } from './api';

/**
 * GET /dashboard/config.json: which sign-ins this gateway offers (docs/DASHBOARD.md). The
 * gateway's own page configuration, not an operation of the public API: read by path, its shape
 * declared here.
 */
export interface DashboardConfig {
  devSignIn: boolean;
  walletSignIn?: boolean;
  oidc?: OidcConfig;
}

export interface OidcConfig {
  issuer: string;
  client_id: string;
  scope: string;
  /** The resource indicator (RFC 8707) of the API: the access token's audience. */
  audience?: string;
}

export function useDashboardConfig() {
  return useQuery({
    queryKey: ['dashboard-config'],
    queryFn: async () => (await apiOf(null).request('GET', '/dashboard/config.json')) as DashboardConfig,
    staleTime: Infinity,
  });
}
