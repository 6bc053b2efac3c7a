/**
 * @mandate/shared/contract (layer 6 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * Route contracts, pagination and the OpenAPI document built from them. Imports the layers below.
 */

export {
  API_KEY_SCOPES,
  type AuthMode,
  CLIENT_IP_BUCKETS,
  type ClientIpBucket,
  defineInternalRoutes,
  defineRoute,
  defineRoutes,
  errorStatusesOf,
  type InternalRouteContract,
  isClientIpBucket,
  type LimitBucket,
  listing,
  type Method,
  oneOrNotFound,
  type RouteContract,
  routeGroup,
  type RouteRule,
  type Scope,
  SECRET_MEMBER_NAMES,
  secretMembersOf,
  type ServiceName,
} from './contract';
export { buildOpenApiDocument } from './openapi';
export {
  decodeCursor,
  encodeCursor,
  type ListOrder,
  listOrderShape,
  listQueryShape,
  type Page,
  readPage,
  toPage,
} from './pagination';
