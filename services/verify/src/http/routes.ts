import { Router, type Request, type Response } from 'express';
import {
  buildEvent,
  callerOf,
  notFound,
  processMetrics,
  route,
  tenantOf,
  type CallerContext,
} from '@mandate/shared';
import { decide, serialiseDecision } from '../domain/decide';
import type { Deps } from '../app';
import { VerifyMetrics } from '../metrics';
import { parseVerifyRequest } from './schemas';

/** What one verify needs from its HTTP request, whichever handler (express route or the hot path) read it. */
export interface VerifyCall {
  caller: CallerContext;
  tenantId: string;
  requestId?: string;
  body: unknown;
}

const decisions = processMetrics();

/** One verify: validate, read the mandate, decide, hand the event over; answers the response body. */
export async function performVerify(deps: Deps, metrics: VerifyMetrics, call: VerifyCall): Promise<string> {
  const { tenantId, caller } = call;
  const input = parseVerifyRequest(call.body);
  // The caller's token names verify as its audience; mandates only takes one minted for it, for the same caller.
  const internalToken = await deps.mandatesTokens!.mint(caller, 'mandates');
  const mandate = await deps.reader.get(
    { tenantId, internalToken, requestId: call.requestId },
    input.mandate_id,
  );
  if (!mandate) throw notFound('Mandate not found');

  const now = deps.clock.now();
  const decision = decide(mandate, input, now);

  // Handed to the (batching) publisher before answering, not awaited: the broker confirms
  // batches, and a verify never waits for a round trip of its own (README "Decisions").
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

export function verifyRoutes(deps: Deps): Router {
  const router = Router();
  const metrics = deps.metrics ?? new VerifyMetrics();

  route(router, '/v1/verify', {
    post: async (req: Request, res: Response) => {
      const body = await performVerify(deps, metrics, {
        tenantId: tenantOf(req),
        caller: callerOf(req),
        requestId: req.requestId,
        body: req.body,
      });
      res.status(200).type('application/json').send(body);
    },
  });

  // Counters for tests and the benchmark (internal token required, like every route).
  route(router, '/internal/v1/metrics', {
    get: (_req: Request, res: Response) => {
      res.json(metrics.snapshot());
    },
  });

  return router;
}
