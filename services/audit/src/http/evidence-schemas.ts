import { z } from 'zod';
import { auditEventSchema, errorResponse, type OpenApiContribution } from '@mandate/shared';

const jwkSchema = z.looseObject({
  kty: z.string(),
  crv: z.string().optional(),
  x: z.string().optional(),
  y: z.string().optional(),
  kid: z.string(),
  alg: z.string().optional(),
  use: z.string().optional(),
});

export const evidenceBundleSchema = z.object({
  mandate: z.looseObject({
    id: z.string(),
    tenant_id: z.string(),
    signature: z.object({ alg: z.literal('ES256'), kid: z.string(), jws: z.string() }),
  }),
  exported_at: z.string(),
  events: z
    .array(auditEventSchema)
    .describe('Every event about the mandate but EVIDENCE_EXPORTED, oldest first'),
  evidence_exports: z
    .int()
    .min(0)
    .describe('How many EVIDENCE_EXPORTED events there are (counted, not listed)'),
  keys: z.array(jwkSchema),
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  signature: z.string(),
});

export const evidenceOpenApi: OpenApiContribution = (registry) => {
  registry.registerPath({
    method: 'get',
    path: '/v1/mandates/{id}/evidence',
    summary: 'Export a verifiable evidence bundle for one mandate',
    description:
      'Scope events:read. Streamed, any size. The mandate with its signature, exported_at, every event about it ' +
      'oldest first except EVIDENCE_EXPORTED (counted in evidence_exports), the JWKS entries that check both ' +
      'signatures, digest = sha256 hex of canonical({mandate, exported_at}) + "\\n", then canonical(event) + "\\n" ' +
      'per event, then canonical({evidence_exports}) (RFC 8785), and signature = compact JWS (ES256, typ ' +
      'mandate-evidence+jws) whose payload is the digest. Check it offline with ' +
      'the checker in the repository, `node packages/evidence-cli/bin/mandate-evidence.js verify bundle.json --jwks jwks.json` ' +
      '(README, "Checking a bundle offline"; never `npx`, which would ask the public registry). Emits EVIDENCE_EXPORTED.',
    tags: ['Events'],
    request: { params: z.object({ id: z.string() }) },
    responses: {
      200: {
        description: 'The evidence bundle',
        content: { 'application/json': { schema: evidenceBundleSchema } },
      },
      401: errorResponse('Missing or invalid credentials'),
      403: errorResponse('API key lacks required scope: events:read'),
      404: errorResponse('No such mandate for this tenant'),
      429: errorResponse('Export rate limit (its own bucket) or quota exceeded'),
      503: errorResponse('The mandates service or the signing key is unavailable'),
    },
  });
};
