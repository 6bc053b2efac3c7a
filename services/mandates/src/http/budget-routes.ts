import { Router } from 'express';
import { decodeCursor, toPage } from '@mandate/shared/contract';
import { callerOf, implement, mountContracts, tenantOf } from '@mandate/shared/http';
import type { Deps } from '../deps';
import { internalRoutes, routes } from '../contract';
import {
  captureAuthorization,
  getAuthorization,
  getBudget,
  holdAuthorization,
  listAuthorizations,
  requestKeyOf,
  voidAuthorization,
} from '../domain/authorizations';

/** Budgets and spend authorizations (docs/API.md#budgets). */
export function budgetRoutes(deps: Deps): Router {
  const router = Router();
  mountContracts(router, [
    implement(routes.holdAuthorization)(async ({ params, body }, req) => {
      const caller = callerOf(req);
      // The gateway forwards Idempotency-Key: a retry after a crash finds the first hold by it.
      const key = req.header('idempotency-key');
      return holdAuthorization(deps, tenantOf(req), params.id, body, caller, requestKeyOf(caller, key));
    }),
    // With Idempotency-Key, a retry finding its own change done is answered as the first attempt.
    implement(routes.captureAuthorization)(async ({ params, body }, req) => ({
      status: 200,
      body: await captureAuthorization(
        deps,
        tenantOf(req),
        params.id,
        body.amount,
        callerOf(req),
        req.header('idempotency-key') !== undefined,
      ),
    })),
    implement(routes.voidAuthorization)(async ({ params }, req) => ({
      status: 200,
      body: await voidAuthorization(
        deps,
        tenantOf(req),
        params.id,
        callerOf(req),
        undefined,
        req.header('idempotency-key') !== undefined,
      ),
    })),
    implement(routes.getAuthorization)(async ({ params }, req) => ({
      status: 200,
      body: await getAuthorization(deps, tenantOf(req), params.id),
    })),
    implement(routes.listAuthorizations)(async ({ params, query }, req) => {
      const items = await listAuthorizations(deps, tenantOf(req), params.id, {
        status: query.status,
        limit: query.limit,
        afterId: decodeCursor(query.cursor),
      });
      return { status: 200, body: toPage(items, query.limit, (a) => a.id) };
    }),
    implement(routes.getBudget)(async ({ params }, req) => ({
      status: 200,
      body: await getBudget(deps, tenantOf(req), params.id),
    })),
  ]);
  // For verify's BUDGET_EXCEEDED: the same read, the tenant taken from the internal token.
  mountContracts(router, [
    implement(internalRoutes.readBudget)(async ({ params }, req) => ({
      status: 200,
      body: await getBudget(deps, tenantOf(req), params.id),
    })),
  ]);
  return router;
}
