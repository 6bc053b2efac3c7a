/**
 * `@mandate/mandates/testing`: what the tests and benchmarks outside this service assemble a
 * mandates service from in-process, and its test helpers. Nothing else outside mandates reaches
 * into its src.
 */
export { createApp, type Deps, type MandatesApp } from '../src/app';
export type { Mandate, MandateState } from '../src/domain/mandate';
export type { ListMandatesQuery } from '../src/store/mandate-store';
export { MemoryMandateStore } from '../src/store/memory-mandate-store';
export { LocalSigner } from '../src/signing/local-signer';
export type { Signer } from '../src/signing/signer';
export { RedisSnapshots } from '../src/snapshots/redis-snapshots';
// The Mongo schemas and the queries they serve, for the index-coverage test.
export { MANDATE_QUERY_SHAPES, mandateSchema, statusListSchema } from '../src/store/mongo-mandate-store';
export {
  AUTHORIZATION_QUERY_SHAPES,
  authorizationSchema,
  budgetPeriodSchema,
} from '../src/store/mongo-authorizations';
export { buildMandate, startService } from './support';
export { makeKmsKey, startFakeKms } from './kms-support';
