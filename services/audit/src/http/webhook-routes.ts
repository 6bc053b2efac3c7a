import { Router } from 'express';
import { decodeCursor } from '@mandate/shared/contract';
import { callerOf, implement, mountContracts, tenantOf } from '@mandate/shared/http';
import { routes } from '../contract';
import {
  createEndpoint,
  deleteEndpoint,
  endpointStats,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  replayFailed,
  retryDelivery,
  rotateSecret,
  sendTest,
  updateEndpoint,
  type WebhookDeps,
} from '../webhooks/endpoints';

/** /v1/webhook-endpoints…; mounted behind requireInternalToken (the gateway checked scope and permissions). */
export function webhookRoutes(deps: WebhookDeps): Router {
  const router = Router();
  mountContracts(router, [
    implement(routes.createWebhookEndpoint)(async ({ body }, req) => ({
      status: 201,
      body: await createEndpoint(deps, callerOf(req), tenantOf(req), body),
    })),
    implement(routes.listWebhookEndpoints)(async ({ query }, req) => ({
      status: 200,
      body: await listEndpoints(deps, callerOf(req), tenantOf(req), {
        limit: query.limit,
        afterId: decodeCursor(query.cursor),
      }),
    })),
    implement(routes.getWebhookEndpoint)(async ({ params }, req) => ({
      status: 200,
      body: await getEndpoint(deps, callerOf(req), tenantOf(req), params.id),
    })),
    implement(routes.updateWebhookEndpoint)(async ({ params, body }, req) => ({
      status: 200,
      body: await updateEndpoint(deps, callerOf(req), tenantOf(req), params.id, body),
    })),
    implement(routes.deleteWebhookEndpoint)(async ({ params }, req) => ({
      status: 200,
      body: await deleteEndpoint(deps, callerOf(req), tenantOf(req), params.id),
    })),
    implement(routes.rotateWebhookSecret)(async ({ params }, req) => ({
      status: 200,
      body: await rotateSecret(deps, callerOf(req), tenantOf(req), params.id),
    })),
    implement(routes.sendWebhookTest)(async ({ params }, req) => ({
      status: 201,
      body: await sendTest(deps, tenantOf(req), params.id),
    })),
    implement(routes.listWebhookDeliveries)(async ({ params, query }, req) => ({
      status: 200,
      body: await listDeliveries(deps, callerOf(req), tenantOf(req), params.id, {
        limit: query.limit,
        afterId: decodeCursor(query.cursor, query.order),
        status: query.status,
        order: query.order,
        withTotal: query.include_total === 'true',
      }),
    })),
    implement(routes.retryWebhookDelivery)(async ({ params }, req) => ({
      status: 200,
      body: await retryDelivery(deps, tenantOf(req), params.id, params.deliveryId),
    })),
    implement(routes.getWebhookEndpointStats)(async ({ params }, req) => ({
      status: 200,
      body: await endpointStats(deps, tenantOf(req), params.id),
    })),
    implement(routes.replayWebhookDeliveries)(async ({ params, body }, req) => ({
      status: 200,
      body: await replayFailed(deps, tenantOf(req), params.id, body),
    })),
  ]);
  return router;
}
