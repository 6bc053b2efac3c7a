import crypto from 'node:crypto';
import { canonicalJson } from '../core/canonical';

/** The top-level members of an evidence bundle, in the order the audit service writes them; no other is allowed. */
export const EVIDENCE_BUNDLE_MEMBERS = [
  'mandate',
  'exported_at',
  'events',
  'evidence_exports',
  'keys',
  'digest',
  'signature',
  // The tamper-evident log (docs/API.md#proving-the-log): signed apart, not covered by the digest.
  'checkpoint',
  'log_proof',
  // Bundles exported before log_proof: an inclusion path per event.
  'proofs',
] as const;

/**
 * The wire contract of an evidence bundle's digest (docs/API.md, "Evidence export"), shared by the
 * audit service that streams and signs a bundle and the offline checker that recomputes it.
 *
 * digest = sha256 hex of the UTF-8 bytes of
 *   canonical({mandate, exported_at}) "\n"
 *   canonical(event) "\n"            — once per listed event, oldest first
 *   canonical({evidence_exports})
 * where canonical is RFC 8785. Canonical JSON never holds a raw newline, so the lines cannot be
 * confused; the digest is computed one event at a time, so a bundle of any size is hashed in bounded
 * memory. `keys` is not covered: each key's kid is its RFC 7638 thumbprint and the checker pins them.
 */
export class EvidenceDigest {
  private readonly hash = crypto.createHash('sha256');
  private count = 0;

  constructor(header: { mandate: unknown; exported_at: string }) {
    this.hash.update(canonicalJson({ mandate: header.mandate, exported_at: header.exported_at }) + '\n');
  }

  /** Adds one listed event and returns its canonical JSON (what was hashed). */
  addEvent(event: unknown): string {
    const line = canonicalJson(event);
    this.hash.update(line + '\n');
    this.count++;
    return line;
  }

  get eventCount(): number {
    return this.count;
  }

  /** The digest, once every event is in; the object cannot be used afterwards. */
  finish(evidenceExports: number): string {
    this.hash.update(canonicalJson({ evidence_exports: evidenceExports }));
    return this.hash.digest('hex');
  }
}

/** The digest of a whole bundle held in memory (the checker's side). */
export function evidenceDigestOf(bundle: {
  mandate: unknown;
  exported_at: string;
  events: readonly unknown[];
  evidence_exports: number;
}): string {
  const digest = new EvidenceDigest(bundle);
  for (const event of bundle.events) digest.addEvent(event);
  return digest.finish(bundle.evidence_exports);
}
