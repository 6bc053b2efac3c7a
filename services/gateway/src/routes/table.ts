import type { RouteContract } from '@mandate/shared/contract';
import { contract as auditContract } from '@mandate/audit';
import { contract as identityContract } from '@mandate/identity';
import { contract as mandatesContract } from '@mandate/mandates';
import { contract as verifyContract } from '@mandate/verify';
import { gatewayContract } from '../contract';

/**
 * The public surface in one table, made of the contracts each service exports as its package's
 * entry (never its internals): which service owns each route, how callers authenticate, the scope
 * (API keys) or permission (JWT callers) it needs and its limit bucket. Authentication, scope
 * checks, 404/405, the route-security tests and `/v1/openapi.json` are all driven from here, so a
 * route cannot ship without them — and adding one touches its service's contract, not the gateway.
 */
export {
  API_KEY_SCOPES,
  type AuthMode,
  type Method,
  type RouteRule,
  type Scope,
  type ServiceName,
} from '@mandate/shared/contract';

export { gatewayContract };

export const CONTRACTS: readonly RouteContract[] = [
  ...mandatesContract,
  ...verifyContract,
  ...auditContract,
  ...identityContract,
  ...gatewayContract,
];

export const ROUTES: RouteContract[] = [...CONTRACTS];
