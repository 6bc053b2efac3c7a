import { Router, type Request } from 'express';
import { parseOrThrow } from '@mandate/shared/core';
import { callerOf, implement, mountContracts, tenantOf } from '@mandate/shared/http';
import { authzen, routes, type AuthzenEvaluation, type EvaluationsSemantic } from '../contract';
import type { AppDeps } from '../deps';
import { batchItems, toVerifyInput, type BatchItem } from '../domain/authzen';
import { authzenAnswer, performEvaluations, type EvaluationOutcome } from '../domain/perform-evaluations';
import { VerifyMetrics } from '../metrics';

/** Where clients reach the gateway when PUBLIC_BASE_URL is not given (as the mandates service's default). */
export const DEFAULT_PUBLIC_BASE_URL = 'http://127.0.0.1:8080';

/**
 * The AuthZEN routes (docs/API.md#authzen): thin entry points into the same evaluation as every
 * item takes, itself the decision of POST /v1/verify.
 */
export function authzenRoutes(deps: AppDeps): Router {
  const router = Router();
  const metrics = deps.metrics ?? new VerifyMetrics();
  const base = (deps.publicBaseUrl ?? DEFAULT_PUBLIC_BASE_URL).replace(/\/+$/, '');
  const configuration = {
    policy_decision_point: base,
    access_evaluation_endpoint: `${base}/access/v1/evaluation`,
    access_evaluations_endpoint: `${base}/access/v1/evaluations`,
  };

  /** One evaluation: the body was validated whole (a bad one is a 400); a failed read is its own status. */
  async function single(body: AuthzenEvaluation, req: Request) {
    const [outcome] = await evaluate(req, [{ input: toVerifyInput(body) }], 'execute_all');
    if (outcome!.kind === 'error') throw outcome!.error;
    return { status: 200 as const, body: authzenAnswer(outcome!) };
  }

  const evaluate = (
    req: Request,
    items: BatchItem[],
    semantic: EvaluationsSemantic,
  ): Promise<EvaluationOutcome[]> =>
    performEvaluations(deps, metrics, {
      caller: callerOf(req),
      tenantId: tenantOf(req),
      requestId: req.requestId,
      items,
      semantic,
    });

  mountContracts(router, [
    implement(routes.accessEvaluation)(({ body }, req) => single(body, req)),

    implement(routes.accessEvaluations)(async ({ body }, req) => {
      if (body.evaluations === undefined) {
        // No items: the body is one evaluation (AuthZEN), validated as /access/v1/evaluation validates it.
        const { options: _options, ...evaluation } = body;
        return single(parseOrThrow(authzen.authzenEvaluationSchema, evaluation), req);
      }
      const outcomes = await evaluate(
        req,
        batchItems(body),
        body.options?.evaluations_semantic ?? 'execute_all',
      );
      return { status: 200, body: { evaluations: outcomes.map(authzenAnswer) } };
    }),

    implement(routes.getAuthzenConfiguration)(async () => ({
      status: 200,
      body: configuration,
      headers: { 'Cache-Control': 'public, max-age=300' },
    })),
  ]);

  return router;
}
