import { Router, type Response } from 'express';
import { serviceUnavailable, systemClock, type Clock, type InternalTokens } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { buildEvent } from '@mandate/shared/events';
import { callerOf, implementRaw, mountContracts, tenantOf } from '@mandate/shared/http';
import { routes } from '../contract';
import { recordEvent } from '../domain/events';
import { exportEvidence, type EvidenceSink } from '../evidence/export-evidence';
import type { MandatesSource } from '../evidence/mandates-source';
import type { AuditStore } from '../store/event-store';
import { checkpointSigner } from '../evidence/checkpoint-signer';

export interface EvidenceRouteDeps {
  store: AuditStore;
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
  mountContracts(router, [
    // Raw: the bundle is streamed; its shape is the contract's 200 schema (checked in the tests).
    implementRaw(routes.exportEvidence)(async ({ params }, req, res) => {
      const tenantId = tenantOf(req);
      if (!deps.mandates) throw serviceUnavailable('Evidence export is not configured (MANDATES_URL)');
      const internalToken = await deps.tokens.mint(callerOf(req), 'mandates');
      const ctx = { tenantId, internalToken, requestId: req.requestId };
      let summary;
      try {
        summary = await exportEvidence(
          {
            store: deps.store,
            mandates: deps.mandates,
            clock,
            signCheckpoint: checkpointSigner(deps.mandates, deps.tokens)?.(tenantId),
          },
          ctx,
          params.id,
          responseSink(res),
        );
      } catch (err) {
        // Before the first byte the error middleware answers (404, 503); after it, the only honest
        // answer is a cut connection, never a bundle that looks complete.
        if (!res.headersSent) throw err;
        deps.logger.error(
          { err, requestId: req.requestId },
          'evidence export failed mid-stream; connection cut',
        );
        res.destroy();
        return;
      }
      res.end();

      // Audit is where events rest, so its own event is written straight to the store rather than sent round the broker.
      const event = buildEvent({
        type: 'EVIDENCE_EXPORTED',
        tenantId,
        resource: { type: 'mandate', id: summary.mandateId },
        data: {
          digest: summary.digest,
          exported_at: summary.exported_at,
          event_count: summary.event_count,
          evidence_exports: summary.evidence_exports,
          kids: summary.kids,
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
    }),
  ]);
  return router;
}

/** Writes to the response with back-pressure; the first write sends the 200 headers (chunked). */
function responseSink(res: Response): EvidenceSink {
  return {
    async write(chunk) {
      if (res.destroyed) throw new Error('client went away');
      if (!res.headersSent) {
        res.status(200);
        res.setHeader('Content-Type', 'application/json; charset=utf-8');
        res.setHeader('Cache-Control', 'no-store');
      }
      if (res.write(chunk)) return;
      await new Promise<void>((resolve, reject) => {
        const drained = () => {
          res.off('close', closed);
          resolve();
        };
        const closed = () => {
          res.off('drain', drained);
          reject(new Error('client went away'));
        };
        res.once('drain', drained);
        res.once('close', closed);
      });
    },
  };
}
