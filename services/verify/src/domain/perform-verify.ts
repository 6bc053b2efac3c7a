import { eventsNotRecordable, notFound, type CallerContext } from '@mandate/shared/core';
import { processMetrics } from '@mandate/shared/observability';
import { buildEvent } from '@mandate/shared/events';
import type { AppDeps } from '../deps';
import type { VerifyMetrics } from '../metrics';
import { decide, serialiseDecision, type VerifyInput } from './decide';

/** One validated verify call, as the route's handler read it. */
export interface VerifyCall {
  caller: CallerContext;
  tenantId: string;
  requestId?: string;
  input: VerifyInput;
}

const decisions = processMetrics();

/** One verify: read the mandate, decide, hand the event over; answers the response body. */
export async function performVerify(
  deps: AppDeps,
  metrics: VerifyMetrics,
  call: VerifyCall,
): Promise<string> {
  const { tenantId, caller, input } = call;
  // No decision whose VERIFICATION_PERFORMED could not be kept (docs/DECISIONS.md, "Event spool full").
  if (deps.publisher.accepting?.() === false) throw eventsNotRecordable('Verification events');
  // The caller's token names verify as its audience; mandates only takes one minted for it, for the same caller.
  const internalToken = await deps.mandatesTokens.mint(caller, 'mandates');
  const mandate = await deps.reader.get(
    { tenantId, internalToken, requestId: call.requestId },
    input.mandate_id,
  );
  if (!mandate) throw notFound('Mandate not found');

  const now = deps.clock.now();
  // A budget is checked against what is available now (docs/API.md#budgets), read-only: only for a
  // mandate that has one and a request with an amount.
  const available =
    mandate.scope.budget && input.amount !== undefined && deps.reader.budgetAvailable
      ? await deps.reader.budgetAvailable({ tenantId, internalToken, requestId: call.requestId }, mandate.id)
      : undefined;
  const decision = decide(mandate, input, now, available);

  // Handed to the publisher before answering, not awaited: it journals the event at once (a
  // SIGKILL after the answer loses nothing), the broker confirms batches, and a verify never
  // waits for a round trip of its own (services/verify/README.md, "Decisions").
  metrics.eventsPublished++;
  deps.publisher
    .publish([
      buildEvent({
        type: 'VERIFICATION_PERFORMED',
        tenantId,
        resource: { type: 'mandate', id: mandate.id },
        data: {
          input,
          decision: decision.decision,
          reason: decision.reason,
          decision_id: decision.decision_id,
          mandate_version: decision.mandate_version,
        },
        caller,
        occurredAt: now,
      }),
    ])
    .catch((err) => {
      // The decision stands; losing its audit event is logged until the outbox lands.
      deps.logger.error(
        { err, requestId: call.requestId, decisionId: decision.decision_id },
        'VERIFICATION_PERFORMED not published',
      );
    });

  metrics.verifications++;
  decisions.countVerifyDecision(decision.decision, decision.reason);
  return serialiseDecision(decision);
}
