import { Router } from 'express';
import { decodeCursor } from '@mandate/shared/contract';
import { implement, mountContracts, tenantOf } from '@mandate/shared/http';
import { getEvent, listEvents, verificationStats } from '../domain/events';
import type { EventStore } from '../store/event-store';
import { routes } from '../contract';

/** GET /v1/events, /v1/events/verification-stats and /v1/events/:id; mounted behind requireInternalToken. */
export function eventRoutes(store: EventStore): Router {
  const router = Router();
  mountContracts(router, [
    implement(routes.listEvents)(async ({ query: q }, req) => {
      const page = await listEvents(store, tenantOf(req), {
        types: q.type,
        resource_id: q.resource_id,
        key_id: q.key_id,
        since: q.since,
        until: q.until,
        exclude_dashboard_reads: q.exclude_dashboard_reads === 'true',
        limit: q.limit,
        afterId: decodeCursor(q.cursor, q.order),
        order: q.order,
        withTotal: q.include_total === 'true',
      });
      return { status: 200, body: page };
    }),
    implement(routes.getVerificationStats)(async ({ query }, req) => ({
      status: 200,
      body: await verificationStats(store, tenantOf(req), query, new Date()),
    })),
    implement(routes.getEvent)(async ({ params }, req) => ({
      status: 200,
      body: await getEvent(store, tenantOf(req), params.id),
    })),
  ]);
  return router;
}
