import { Router, type Request, type Response } from 'express';
import { callerOf, implementRaw, mountContracts, route, tenantOf } from '@mandate/shared';
import type { AppDeps } from '../deps';
import { performVerify } from '../domain/perform-verify';
import { VerifyMetrics } from '../metrics';
import { routes } from '../contract';
import { parseVerifyRequest } from './schemas';

export function verifyRoutes(deps: AppDeps): Router {
  const router = Router();
  const metrics = deps.metrics ?? new VerifyMetrics();

  mountContracts(router, [
    // Raw: the body is parsed with the contract's schema (its fast path first) and the decision is
    // answered serialised once, byte-identical for the same input and version.
    implementRaw(routes.verify)(async (_input, req, res) => {
      const tenantId = tenantOf(req);
      const body = await performVerify(deps, metrics, {
        tenantId,
        caller: callerOf(req),
        requestId: req.requestId,
        input: parseVerifyRequest(req.body),
      });
      res.status(200).type('application/json').send(body);
    }),
  ]);

  // Counters for tests and the benchmark (internal token required, like every route).
  route(router, '/internal/v1/metrics', {
    get: (_req: Request, res: Response) => {
      res.json(metrics.snapshot());
    },
  });

  return router;
}
