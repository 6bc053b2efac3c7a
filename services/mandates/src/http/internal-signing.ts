import { Router } from 'express';
import { decodeProtectedHeader } from 'jose';
import { z } from 'zod';
import { parseOrThrow, route, tenantOf } from '@mandate/shared';
import type { Deps } from '../app';
import { SigningUnavailable } from '../domain/errors';
import { EVIDENCE_JWS_TYP } from '../signing/signer';

/**
 * Only a SHA-256 hex digest is accepted, never an arbitrary payload: the key that signs mandates
 * must not be usable to sign something that reads like a mandate. The JWS also carries
 * typ "mandate-evidence+jws", so a verifier can tell the two kinds apart by header alone.
 */
export const evidenceSignatureBody = z.strictObject({
  digest: z
    .string()
    .regex(/^[0-9a-f]{64}$/, { error: 'must be a SHA-256 digest in lowercase hex (64 characters)' }),
});

/**
 * POST /internal/v1/signatures {digest} → {alg, kid, jws}: the audit service signs evidence
 * bundles with the same Signer (local key or KMS) as mandates, so there is one signing
 * configuration and one JWKS. Internal only: the gateway's route table has no entry for it.
 */
export function internalSigningRoutes(deps: Pick<Deps, 'signer' | 'logger'>): Router {
  const router = Router();
  route(router, '/internal/v1/signatures', {
    post: async (req, res) => {
      // A tenant-scoped caller only (the audit service forwarding a tenant's export).
      const tenantId = tenantOf(req);
      const { digest } = parseOrThrow(evidenceSignatureBody, req.body);
      let jws: string;
      try {
        jws = await deps.signer.sign(digest, { typ: EVIDENCE_JWS_TYP });
      } catch (err) {
        throw new SigningUnavailable(err);
      }
      const { kid } = decodeProtectedHeader(jws);
      deps.logger.info({ requestId: req.requestId, tenantId, kid }, 'evidence digest signed');
      res.json({ alg: deps.signer.alg, kid, jws });
    },
  });
  return router;
}
