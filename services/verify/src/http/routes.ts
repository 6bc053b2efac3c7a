import { Router, type Request, type Response } from 'express';
import { route } from '@mandate/shared/http';
import type { AppDeps } from '../deps';

/** Verify's express routes beside POST /v1/verify, which has its own handler (verify-route.ts). */
export function verifyRoutes(deps: AppDeps): Router {
  const router = Router();
  const { metrics } = deps;

  // Counters for tests and the benchmark (internal token required, like every route).
  route(router, '/internal/v1/metrics', {
    get: (_req: Request, res: Response) => {
      res.json(metrics.snapshot());
    },
  });

  return router;
}
