/**
 * @mandate/shared/contract (layer 6 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * Route contracts, pagination and the OpenAPI document built from them. Imports the layers below.
 */

export {
  API_KEY_SCOPES,
  type AuthMode,
  defineInternalRoutes,
  defineRoutes,
  errorStatusesOf,
  type InternalRouteContract,
  type LimitBucket,
  listing,
  type Method,
  type RouteContract,
  routeGroup,
  type RouteRule,
  type Scope,
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
  toPage,
} from './pagination';
