/**
 * `@mandate/verify/testing`: what the tests and benchmarks outside this service assemble a verify
 * service from in-process, and its test helpers. Nothing else outside verify reaches into its src.
 */
export { createApp, type VerifyApp } from '../src/app';
export { decide, type VerifyInput } from '../src/domain/decide';
export type { Mandate } from '../src/domain/mandate';
export { fastVerifyRequest, parseVerifyRequest } from '../src/http/schemas';
export { CountingPublisher } from '../src/events/counting-publisher';
export { HttpMandateReader } from '../src/mandates/http-mandate-reader';
export { RedisSnapshotSource } from '../src/mandates/snapshot-source';
export { SnapshotMandateReader } from '../src/mandates/snapshot-mandate-reader';
export { VerifyMetrics } from '../src/metrics';
export { buildMandate, NOW } from './factories';
