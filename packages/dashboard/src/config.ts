import { useQuery } from '@tanstack/react-query';
import { call } from './api';

/** GET /dashboard/config.json: which sign-ins this gateway offers (README, "Dashboard"). */
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
    queryFn: () => call<DashboardConfig>(null, 'GET', '/dashboard/config.json'),
    staleTime: Infinity,
  });
}
