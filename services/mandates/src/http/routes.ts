import { Router } from 'express';
import { decodeCursor } from '@mandate/shared/contract';
import { callerOf, implement, mountContracts, tenantOf } from '@mandate/shared/http';
import type { Deps } from '../deps';
import { applyOperation, createMandate, getMandate, listMandates, readForVerify } from '../domain/mandates';
import type { LifecycleOperation } from '../domain/state-machine';
import { requestKeyOf, voidHoldsOfRevoked } from '../domain/authorizations';
import { internalRoutes, routes, type PublicJwk } from '../contract';

export function mandateRoutes(deps: Deps): Router {
  const router = Router();

  mountContracts(router, [
    implement(routes.listMandates)(async ({ query: { cursor, include_total, ...query } }, req) => ({
      status: 200,
      body: await listMandates(deps, tenantOf(req), {
        ...query,
        afterId: decodeCursor(cursor, query.order),
        withTotal: include_total === 'true',
      }),
    })),
    implement(routes.createMandate)(async ({ body }, req) => {
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
        // The gateway forwards Idempotency-Key: a retry after the gateway lost its record finds the first mandate.
        requestKeyOf(callerOf(req), req.header('idempotency-key')),
      );
      // MANDATE_CREATED was stored with the mandate (outbox) and handed to the relay.
      return { status: 201, body: mandate };
    }),
    implement(routes.getMandate)(async ({ params }, req) => ({
      status: 200,
      body: await getMandate(deps, tenantOf(req), params.id),
    })),
    ...(['suspend', 'reactivate', 'revoke'] as const satisfies LifecycleOperation[]).map((operation) =>
      // An empty body is allowed: the reason is optional (bodyRequired: false).
      implement(routes[`${operation}Mandate`])(async ({ params, body }, req) => {
        // The lifecycle event is stored with the change (outbox) and handed to the relay.
        const { mandate } = await applyOperation(deps, tenantOf(req), params.id, operation, {
          caller: callerOf(req),
          reason: body.reason,
        });
        // Revoking a mandate voids its holds (docs/API.md#budgets); suspension leaves them.
        if (operation === 'revoke') await voidHoldsOfRevoked(deps, tenantOf(req), params.id, callerOf(req));
        return { status: 200, body: mandate };
      }),
    ),
    implement(routes.getJwks)(async () => ({
      status: 200,
      // jose types every JWK member optional; an EC P-256 public key has each (the tests check the body).
      body: { keys: (await deps.signer.publicJwks()) as PublicJwk[] },
      headers: { 'Cache-Control': 'public, max-age=300' },
    })),
  ]);

  // For verify and audit: the same read, the tenant taken from the internal token; it also refills the snapshot verify missed.
  mountContracts(router, [
    implement(internalRoutes.readMandate)(async ({ params }, req) => ({
      status: 200,
      body: await readForVerify(deps, tenantOf(req), params.id),
    })),
  ]);

  return router;
}
