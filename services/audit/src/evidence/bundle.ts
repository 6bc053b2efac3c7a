import { canonicalJson, sha256Hex, type AuditEvent } from '@mandate/shared';

/** A public JWK as the mandates service publishes it (EC P-256, kid, alg, use). */
export type PublicJwk = Record<string, unknown> & { kid?: string };

/** The mandate as the mandates service serves it; the export carries it unchanged. */
export type EvidenceMandate = Record<string, unknown> & {
  id: string;
  tenant_id: string;
  signature: { alg: string; kid: string; jws: string };
};

/** The part of the bundle the digest covers. */
export interface EvidenceContent {
  mandate: EvidenceMandate;
  /** Every event about the mandate, oldest first. */
  events: AuditEvent[];
  /** The JWKS entries that check the mandate's signature and the bundle's. */
  keys: PublicJwk[];
  exported_at: string;
}

/** SPEC §5 Evidence export; the README ("Signing keys and evidence") defines it byte for byte. */
export interface EvidenceBundle extends EvidenceContent {
  /** sha256, lowercase hex, of the RFC 8785 canonical JSON of {mandate, events, keys, exported_at}. */
  digest: string;
  /** Compact JWS (ES256, typ mandate-evidence+jws) whose payload is the digest string. */
  signature: string;
}

/** The JWS `typ` of a bundle signature; the mandates service sets it for every digest it signs. */
export const EVIDENCE_JWS_TYP = 'mandate-evidence+jws';

export function evidenceDigest(content: EvidenceContent): string {
  const { mandate, events, keys, exported_at } = content;
  return sha256Hex(canonicalJson({ mandate, events, keys, exported_at }));
}
