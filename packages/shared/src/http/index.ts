/**
 * @mandate/shared/http (layer 7 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * Serving and calling HTTP: the request pipeline, express apps, servers, clients, contract routes.
 * Imports the layers below.
 */

export { type CallContext, ContractClient, type RefusedAnswer } from './contract-client';
export { implement, type Implementation, implementRaw, mountContracts } from './contract-route';
export {
  AnswerInterrupted,
  type RetryPolicy,
  ServiceClient,
  type UpstreamRequest,
  UpstreamUnavailable,
} from './http-client';
export {
  baseApp,
  callerOf,
  errorMiddleware,
  healthRoutes,
  internalServiceApp,
  jsonBody,
  notFoundHandler,
  type ReadinessCheck,
  requireInternalToken,
  route,
  tenantOf,
} from './http';
export {
  addressRefusal,
  bareHost,
  type OutboundLookup,
  OutboundPool,
  OutboundRefused,
  safeFetch,
} from './outbound';
export {
  answerError,
  BODY_LIMIT_BYTES,
  callerOfHeaders,
  parseJsonBody,
  readPlainBody,
  requestIdFor,
  sendEnvelope,
  sendJson,
  tenantOfCaller,
} from './pipeline';
export {
  appLifecycle,
  type AppLifecycle,
  assertCanListen,
  DRAIN_TIMEOUT_MS,
  listen,
  ListenError,
  listenProblem,
  type RunningServer,
} from './server';
