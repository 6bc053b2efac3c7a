import { Router } from 'express';
import { decodeProtectedHeader } from 'jose';
import { badRequest, canonicalJson } from '@mandate/shared/core';
import { AUDIT_CHECKPOINT_TYP } from '@mandate/shared/mandate';
import { implement, mountContracts, tenantOf } from '@mandate/shared/http';
import type { Deps } from '../deps';
import { internalRoutes } from '../contract';
import { SigningUnavailable } from '../domain/errors';
import { EVIDENCE_JWS_TYP } from '../signing/signer';

/**
 * The audit service's evidence signatures (`internalRoutes.signEvidenceDigest`): only a digest is
 * signed, never an arbitrary payload, and the JWS carries typ mandate-evidence+jws.
 */
export function internalSigningRoutes(deps: Pick<Deps, 'signer' | 'logger'>): Router {
  const router = Router();
  mountContracts(router, [
    implement(internalRoutes.signEvidenceDigest)(async ({ body }, req) => {
      // A tenant-scoped caller only (the audit service forwarding a tenant's export).
      const tenantId = tenantOf(req);
      let jws: string;
      try {
        jws = await deps.signer.sign(body.digest, { typ: EVIDENCE_JWS_TYP });
      } catch (err) {
        throw new SigningUnavailable(err);
      }
      const { kid } = decodeProtectedHeader(jws);
      deps.logger.info({ requestId: req.requestId, tenantId, kid }, 'evidence digest signed');
      return { status: 200, body: { alg: deps.signer.alg, kid: kid!, jws } };
    }),
    // docs/API.md#proving-the-log: the payload is the canonical JSON of exactly the four claims.
    implement(internalRoutes.signAuditCheckpoint)(async ({ body }, req) => {
      const tenantId = tenantOf(req);
      if (body.tenant_id !== tenantId) throw badRequest('tenant_id must be the caller’s tenant');
      let jws: string;
      try {
        jws = await deps.signer.sign(canonicalJson(body), { typ: AUDIT_CHECKPOINT_TYP });
      } catch (err) {
        throw new SigningUnavailable(err);
      }
      const { kid } = decodeProtectedHeader(jws);
      deps.logger.info(
        { requestId: req.requestId, tenantId, kid, treeSize: body.tree_size },
        'audit checkpoint signed',
      );
      return { status: 200, body: { alg: deps.signer.alg, kid: kid!, jws } };
    }),
  ]);
  return router;
}
