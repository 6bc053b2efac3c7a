/** The events the audit benchmarks ingest and export (bench:audit-log, bench:audit-ingest). */
import { newId, type CallerContext } from '@mandate/shared/core';
import { buildEvent, type AuditEvent } from '@mandate/shared/events';

/** An API key of the tenant allowed to read its events. */
function benchCaller(tenantId: string): CallerContext {
  return {
    tenantId,
    actor: { type: 'api_key', key_id: 'key_bench' },
    permissions: ['events:read'],
    requestId: newId('req'),
  };
}

/** A verification about the mandate, as bench:evidence writes them. */
export function verification(tenantId: string, mandateId: string, i: number): AuditEvent {
  return buildEvent({
    type: 'VERIFICATION_PERFORMED',
    tenantId,
    resource: { type: 'mandate', id: mandateId },
    data: {
      input: { mandate_id: mandateId, action: 'payments:create', amount: i % 50_000, currency: 'EUR' },
      decision: 'ALLOW',
      reason: 'OK',
      decision_id: `dec_${i.toString(16).padStart(26, '0')}`,
      mandate_version: 1,
    },
    caller: benchCaller(tenantId),
  });
}
