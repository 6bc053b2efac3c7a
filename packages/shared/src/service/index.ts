/**
 * @mandate/shared/service (layer 8 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * A service's process: configuration to composition, wiring, main. The top layer.
 */
export * from './main';
export * from './wiring';
export * from './composition';
export * from './deployment';
