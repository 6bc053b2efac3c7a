import { Router, type Request, type Response } from 'express';
import { INTERNAL_TOKEN_HEADER, buildEvent, callerOf, notFound, route, tenantOf } from '@mandate/shared';
import { decide, serialiseDecision } from '../domain/decide';
import type { Deps } from '../app';
import { parseBody, verifyRequestSchema } from './schemas';

export function verifyRoutes(deps: Deps): Router {
  const router = Router();

  route(router, '/v1/verify', {
    post: async (req: Request, res: Response) => {
      const tenantId = tenantOf(req);
      const input = parseBody(verifyRequestSchema, req.body);
      const mandate = await deps.reader.get(
        { tenantId, internalToken: req.header(INTERNAL_TOKEN_HEADER)!, requestId: req.requestId },
        input.mandate_id,
      );
      if (!mandate) throw notFound('Mandate not found');

      const now = deps.clock.now();
      const decision = decide(mandate, input, now);

      try {
        await deps.publisher.publish([
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
            caller: callerOf(req),
            occurredAt: now,
          }),
        ]);
      } catch (err) {
        // The decision stands; losing its audit event is logged until the outbox lands.
        deps.logger.error(
          { err, requestId: req.requestId, decisionId: decision.decision_id },
          'VERIFICATION_PERFORMED not published',
        );
      }

      res.status(200).type('application/json').send(serialiseDecision(decision));
    },
  });

  return router;
}
