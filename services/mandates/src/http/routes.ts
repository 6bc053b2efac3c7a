import { Router } from 'express';
import { callerOf, decodeCursor, parseOrThrow, route, tenantOf, toPage } from '@mandate/shared';
import type { Deps } from '../app';
import { applyOperation, createMandate, getMandate, listMandates, readForVerify } from '../domain/mandates';
import type { LifecycleOperation } from '../domain/state-machine';
import { createMandateBody, lifecycleBody, listMandatesQuery } from './schemas';

export function mandateRoutes(deps: Deps): Router {
  const router = Router();

  route(router, '/v1/mandates', {
    get: async (req, res) => {
      const query = parseOrThrow(listMandatesQuery, req.query, 'query');
      const items = await listMandates(deps, tenantOf(req), {
        state: query.state,
        principal_id: query.principal_id,
        delegate_id: query.delegate_id,
        limit: query.limit,
        afterId: decodeCursor(query.cursor),
      });
      res.json(toPage(items, query.limit, (m) => m.id));
    },
    post: async (req, res) => {
      const body = parseOrThrow(createMandateBody, req.body);
      const mandate = await createMandate(
        deps,
        tenantOf(req),
        {
          principal: body.principal,
          delegate: body.delegate,
          scope: body.scope ?? { actions: ['*'] },
          valid_from: body.valid_from ?? null,
          expires_at: body.expires_at ?? null,
          metadata: body.metadata ?? {},
        },
        callerOf(req),
      );
      // MANDATE_CREATED was stored with the mandate (outbox) and handed to the relay.
      res.status(201).json(mandate);
    },
  });

  route(router, '/v1/mandates/:id', {
    get: async (req, res) => {
      res.json(await getMandate(deps, tenantOf(req), String(req.params.id)));
    },
  });

  for (const operation of ['suspend', 'reactivate', 'revoke'] as const satisfies LifecycleOperation[]) {
    route(router, `/v1/mandates/:id/${operation}`, {
      post: async (req, res) => {
        // An empty body is allowed: the reason is optional.
        const { reason } = parseOrThrow(lifecycleBody, req.body ?? {});
        // The lifecycle event is stored with the change (outbox) and handed to the relay.
        const { mandate } = await applyOperation(deps, tenantOf(req), String(req.params.id), operation, {
          caller: callerOf(req),
          reason,
        });
        res.json(mandate);
      },
    });
  }

  route(router, '/v1/.well-known/jwks.json', {
    get: async (_req, res) => {
      res.setHeader('Cache-Control', 'public, max-age=300');
      res.json({ keys: await deps.signer.publicJwks() });
    },
  });

  // For the verify service: the same read, the tenant taken from the internal token; it also refills the snapshot verify missed.
  route(router, '/internal/v1/mandates/:id', {
    get: async (req, res) => {
      res.json(await readForVerify(deps, tenantOf(req), String(req.params.id)));
    },
  });

  return router;
}
