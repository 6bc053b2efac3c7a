import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The MAC of a mandate snapshot in Redis (docs/API.md, "Hardening"): the mandates service signs the exact JSON it
 * stores, verify checks those bytes before deciding on them, so a write to Redis alone cannot
 * forge an ALLOW. One HMAC-SHA256 over the stored string, no re-canonicalisation: it is on
 * verify's hot path.
 */
export interface SnapshotMac {
  /** base64url MAC of `json`. */
  sign(json: string): string;
  /** True only when `mac` is the MAC of exactly `json`; compared in constant time. */
  check(json: string, mac: string | null | undefined): boolean;
}

/** Separates this key from the internal-token key derived from the same secret. */
const LABEL = 'mandate-snapshot-mac/v1';

/** The MAC keyed from INTERNAL_TOKEN_SECRET through a labelled HMAC, never with the secret itself. */
export function snapshotMac(internalTokenSecret: string): SnapshotMac {
  const key = createHmac('sha256', internalTokenSecret).update(LABEL).digest();
  const mac = (json: string) => createHmac('sha256', key).update(json, 'utf8').digest();
  return {
    sign: (json) => mac(json).toString('base64url'),
    check: (json, given) => {
      if (typeof given !== 'string') return false;
      const expected = mac(json);
      const actual = Buffer.from(given, 'base64url');
      return actual.length === expected.length && timingSafeEqual(actual, expected);
    },
  };
}
