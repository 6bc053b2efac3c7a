import { Router } from 'express';
import { decodeCursor, parseOrThrow, route, tenantOf } from '@mandate/shared';
import { getEvent, listEvents } from '../domain/events';
import type { EventStore } from '../store/event-store';
import { listEventsQuerySchema } from './schemas';

/** GET /v1/events and /v1/events/:id; mounted behind requireInternalToken. */
export function eventRoutes(store: EventStore): Router {
  const router = Router();
  route(router, '/v1/events', {
    get: async (req, res) => {
      const tenantId = tenantOf(req);
      const q = parseOrThrow(listEventsQuerySchema, req.query, 'query');
      const page = await listEvents(store, tenantId, {
        types: q.type,
        resource_id: q.resource_id,
        key_id: q.key_id,
        since: q.since,
        until: q.until,
        limit: q.limit,
        afterId: decodeCursor(q.cursor),
      });
      res.json(page);
    },
  });
  route(router, '/v1/events/:id', {
    get: async (req, res) => {
      res.json(await getEvent(store, tenantOf(req), String(req.params.id)));
    },
  });
  return router;
}
