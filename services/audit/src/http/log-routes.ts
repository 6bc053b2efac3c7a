import { Router } from 'express';
import { implement, mountContracts, tenantOf } from '@mandate/shared/http';
import { routes } from '../contract';
import { consistencyProof, inclusionProof, latestCheckpoint, listCheckpoints } from '../domain/log';
import type { AuditStore } from '../store/event-store';

/** The log's checkpoints and proofs (docs/API.md#proving-the-log); mounted behind requireInternalToken. */
export function logRoutes(store: AuditStore): Router {
  const router = Router();
  mountContracts(router, [
    // Before any /v1/audit/checkpoints/:x a later route might add: the literal path first.
    implement(routes.getLatestAuditCheckpoint)(async (_input, req) => ({
      status: 200,
      body: await latestCheckpoint(store, tenantOf(req)),
    })),
    implement(routes.listAuditCheckpoints)(async ({ query }, req) => ({
      status: 200,
      body: await listCheckpoints(store, tenantOf(req), query),
    })),
    implement(routes.getInclusionProof)(async ({ params, query }, req) => ({
      status: 200,
      body: await inclusionProof(store, tenantOf(req), params.id, query.tree_size),
    })),
    implement(routes.getConsistencyProof)(async ({ query }, req) => ({
      status: 200,
      body: await consistencyProof(store, tenantOf(req), query.from, query.to),
    })),
  ]);
  return router;
}
