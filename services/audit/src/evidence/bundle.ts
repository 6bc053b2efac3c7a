import type { AuditEvent } from '@mandate/shared/events';

/** A public JWK as the mandates service publishes it (EC P-256, kid = RFC 7638 thumbprint, alg, use). */
export type PublicJwk = Record<string, unknown> & { kid?: string };

/** The mandate as the mandates service serves it; the export carries it unchanged. */
export type EvidenceMandate = Record<string, unknown> & {
  id: string;
  tenant_id: string;
  signature: { alg: string; kid: string; jws: string };
};

/**
 * docs/API.md, "Evidence export"; docs/VERIFY-AND-IDENTITY.md, "Signing keys and evidence", defines it byte for byte
 * and packages/shared/src/mandate/evidence-digest.ts computes its digest.
 */
export interface EvidenceBundle {
  mandate: EvidenceMandate;
  exported_at: string;
  /** Every event about the mandate but EVIDENCE_EXPORTED, oldest first. */
  events: AuditEvent[];
  /** How many EVIDENCE_EXPORTED events there were: counted, not listed, so exporting never grows the next bundle. */
  evidence_exports: number;
  /** The JWKS entries that check the mandate's signature and the bundle's (not covered by the digest: pinned by kid). */
  keys: PublicJwk[];
  /** sha256 hex over the canonical header, each canonical event and the canonical trailer. */
  digest: string;
  /** Compact JWS (ES256, typ mandate-evidence+jws) whose payload is the digest string. */
  signature: string;
}

/** The JWS `typ` of a bundle signature; the mandates service sets it for every digest it signs. */
export const EVIDENCE_JWS_TYP = 'mandate-evidence+jws';
