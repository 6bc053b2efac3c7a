/**
 * @mandate/shared/service (layer 8 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * A service's process: configuration to composition, wiring, main. The top layer.
 */

export { compose } from './composition';
export { type DeploymentNeeds, deploymentProblems } from './deployment';
export {
  type BaseConfig,
  reportStartFailure,
  runService,
  serviceConfig,
  type ServiceMain,
  type StartedService,
  type StartOptions,
  startService,
} from './main';
export {
  Closers,
  composeStoreAndPublisher,
  decisionClock,
  loggerAndClock,
  outboxAppLifecycle,
  tokensFor,
  type Wire,
  wireWith,
} from './wiring';
