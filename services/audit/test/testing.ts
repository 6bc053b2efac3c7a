/**
 * `@mandate/audit/testing`: what the tests and benchmarks outside this service assemble an audit
 * service from in-process, and its test helpers. Nothing else outside audit reaches into its src.
 */
export { createApp, type AuditService } from '../src/app';
export { auditConfig } from '../src/config';
export { wire } from '../src/wiring';
export { DEFAULT_RETRY_SCHEDULE_SECONDS, RETRY_JITTER, nextAttemptAt } from '../src/webhooks/webhook';
export { MemoryEventStore } from '../src/store/memory-event-store';
export type { EventListQuery } from '../src/store/event-store';
export { EVIDENCE_JWS_TYP, type EvidenceMandate } from '../src/evidence/bundle';
export { HttpMandatesSource, type MandatesSource } from '../src/evidence/mandates-source';
export { exportEvidence, type EvidenceSink } from '../src/evidence/export-evidence';
// The log's proofs and the consumer's write, for the log benchmark (bench/audit-log.ts).
export { checkpointNow, consistencyProof, inclusionProof } from '../src/domain/log';
export { recordEvents } from '../src/domain/events';
export { startAuditConsumer } from '../src/consumers/audit-consumer';
// The Mongo schemas and the queries they serve, for the index-coverage test.
export { EVENT_QUERY_SHAPES, eventSchema } from '../src/store/mongo-event-store';
export { LOG_QUERY_SHAPES, checkpointSchema, logHeadSchema, logNodeSchema } from '../src/store/mongo-log';
export {
  WEBHOOK_QUERY_SHAPES,
  webhookDeliverySchema,
  webhookEndpointSchema,
} from '../src/webhooks/mongo-webhook-store';
export { buildAuditEvent } from './factories';
export { eventually, startReceiver, type Receiver } from './webhook-receiver';
