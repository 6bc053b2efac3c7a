import { Router } from 'express';
import { implementRaw, mountContracts } from '@mandate/shared/http';
import { routes } from '../contract';
import { STATUS_LIST_CONTENT_TYPE, matchesEtag } from './status-list';
import type { StatusLists } from './status-lists';

/** GET /v1/status-lists/:list_id — public; the gateway forwards If-None-Match, ETag and Cache-Control. */
export function statusListRoutes(statusLists: StatusLists): Router {
  const router = Router();
  mountContracts(router, [
    implementRaw(routes.getStatusList)(async ({ params }, req, res) => {
      const list = await statusLists.current(params.list_id);
      res.setHeader('ETag', list.etag);
      res.setHeader('Cache-Control', `public, max-age=${statusLists.maxAgeOf(list)}`);
      if (matchesEtag(req.headers['if-none-match'], list.etag)) {
        res.status(304).end();
        return;
      }
      res.status(200).type(STATUS_LIST_CONTENT_TYPE).send(list.token);
    }),
  ]);
  return router;
}
