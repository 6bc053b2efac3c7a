import { Router } from 'express';
import {
  buildEvent,
  callerOf,
  route,
  serviceUnavailable,
  systemClock,
  tenantOf,
  type Clock,
  type InternalTokens,
  type Logger,
} from '@mandate/shared';
import { recordEvent } from '../domain/events';
import { exportEvidence } from '../evidence/export-evidence';
import type { MandatesSource } from '../evidence/mandates-source';
import type { EventStore } from '../store/event-store';

export interface EvidenceRouteDeps {
  store: EventStore;
  /** Mints the caller's token for the mandates service (the caller's own names audit as its audience). */
  tokens: InternalTokens;
  /** Absent when MANDATES_URL is not configured: the export then answers 503. */
  mandates?: MandatesSource;
  logger: Logger;
  clock?: Clock;
}

/** GET /v1/mandates/:id/evidence (scope events:read at the gateway); mounted behind requireInternalToken. */
export function evidenceRoutes(deps: EvidenceRouteDeps): Router {
  const router = Router();
  const clock = deps.clock ?? systemClock;
  route(router, '/v1/mandates/:id/evidence', {
    get: async (req, res) => {
      const tenantId = tenantOf(req);
      if (!deps.mandates) throw serviceUnavailable('Evidence export is not configured (MANDATES_URL)');
      const internalToken = await deps.tokens.mint(callerOf(req), 'mandates');
      const ctx = { tenantId, internalToken, requestId: req.requestId };
      const bundle = await exportEvidence(
        { store: deps.store, mandates: deps.mandates, clock },
        ctx,
        String(req.params.id),
      );

      // Audit is where events rest, so its own event is written straight to the store rather than sent round the broker.
      const event = buildEvent({
        type: 'EVIDENCE_EXPORTED',
        tenantId,
        resource: { type: 'mandate', id: bundle.mandate.id },
        data: {
          digest: bundle.digest,
          exported_at: bundle.exported_at,
          event_count: bundle.events.length,
          kids: bundle.keys.map((k) => k.kid),
        },
        caller: callerOf(req),
        occurredAt: clock.now(),
      });
      try {
        await recordEvent(deps.store, event);
      } catch (err) {
        deps.logger.error(
          { err, requestId: req.requestId, eventId: event.id },
          'EVIDENCE_EXPORTED not recorded',
        );
      }
      res.setHeader('Cache-Control', 'no-store');
      res.json(bundle);
    },
  });
  return router;
}
