import { compactVerify, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import { MANDATE_SIGNED_FIELDS, canonicalJson, mandateSigningPayload, sha256Hex } from '@mandate/shared';

/** The JWS `typ` of a bundle signature (the mandate's own signature carries none). */
export const EVIDENCE_JWS_TYP = 'mandate-evidence+jws';

export type CheckName = 'digest' | 'bundle signature' | 'mandate signature';

export interface CheckResult {
  check: CheckName;
  ok: boolean;
  detail: string;
}

export interface VerifyOptions {
  /**
   * Keys trusted out of band (e.g. the service's published JWKS, saved earlier). When given, every
   * key the bundle uses must be one of them; otherwise the bundle's own keys are taken as they are.
   */
  trustedKeys?: JWK[];
}

/** The bundle is not shaped like an evidence export at all (as opposed to failing a check). */
export class BundleFormatError extends Error {}

interface Bundle {
  mandate: Record<string, unknown> & { signature: { kid: string; jws: string } };
  events: unknown[];
  keys: JWK[];
  exported_at: string;
  digest: string;
  signature: string;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function asBundle(input: unknown): Bundle {
  const need = (ok: boolean, what: string) => {
    if (!ok) throw new BundleFormatError(`not an evidence bundle: ${what}`);
  };
  need(isObject(input), 'expected a JSON object');
  const b = input as Record<string, unknown>;
  need(isObject(b.mandate), 'mandate must be an object');
  const m = b.mandate as Record<string, unknown>;
  need(isObject(m.signature), 'mandate.signature must be an object');
  const sig = m.signature as Record<string, unknown>;
  need(typeof sig.jws === 'string' && typeof sig.kid === 'string', 'mandate.signature needs kid and jws');
  for (const field of MANDATE_SIGNED_FIELDS) need(field in m, `mandate.${field} is missing`);
  need(Array.isArray(b.events), 'events must be an array');
  need(Array.isArray(b.keys) && b.keys.every(isObject), 'keys must be an array of JWKs');
  need(typeof b.exported_at === 'string', 'exported_at must be a string');
  need(typeof b.digest === 'string', 'digest must be a string');
  need(typeof b.signature === 'string', 'signature must be a compact JWS string');
  return b as unknown as Bundle;
}

/** The digest the bundle should state: sha256 hex of the RFC 8785 form of {mandate, events, keys, exported_at}. */
export function bundleDigest(b: Pick<Bundle, 'mandate' | 'events' | 'keys' | 'exported_at'>): string {
  return sha256Hex(
    canonicalJson({ mandate: b.mandate, events: b.events, keys: b.keys, exported_at: b.exported_at }),
  );
}

// The exact bytes a mandate signature covers: one contract with the service that signs.
export { mandateSigningPayload };

/**
 * Runs the three checks with nothing but the bundle (and optional trusted keys): the digest, the
 * bundle's signature over it, the mandate's signature over its immutable fields. Every check runs
 * and reports, so a tampered bundle says everything that is wrong with it.
 */
export async function verifyBundle(input: unknown, options: VerifyOptions = {}): Promise<CheckResult[]> {
  const bundle = asBundle(input);
  const results: CheckResult[] = [];

  const recomputed = bundleDigest(bundle);
  results.push(
    recomputed === bundle.digest
      ? {
          check: 'digest',
          ok: true,
          detail: `sha256 ${recomputed} covers the mandate, ${bundle.events.length} event(s), ${bundle.keys.length} key(s) and exported_at`,
        }
      : {
          check: 'digest',
          ok: false,
          detail: `the bundle states ${bundle.digest} but its contents hash to ${recomputed}`,
        },
  );

  results.push(
    await checkJws('bundle signature', bundle.signature, bundle, options, (header, payload) => {
      if (header.typ !== EVIDENCE_JWS_TYP)
        return `typ is ${String(header.typ)}, expected ${EVIDENCE_JWS_TYP}`;
      if (payload !== bundle.digest) return 'it signs another digest than the one the bundle states';
      return undefined;
    }),
  );

  const expectedPayload = mandateSigningPayload(bundle.mandate);
  results.push(
    await checkJws('mandate signature', bundle.mandate.signature.jws, bundle, options, (header, payload) => {
      if (header.kid !== bundle.mandate.signature.kid)
        return `the JWS kid ${String(header.kid)} differs from mandate.signature.kid`;
      if (header.typ !== undefined) return `unexpected typ ${String(header.typ)} on a mandate signature`;
      if (payload !== expectedPayload)
        return "it signs other values than the mandate's immutable fields (id, tenant_id, principal, delegate, scope, valid_from, expires_at, created_at)";
      return undefined;
    }),
  );
  return results;
}

async function checkJws(
  check: CheckName,
  jws: string,
  bundle: Bundle,
  options: VerifyOptions,
  inspect: (header: Record<string, unknown>, payload: string) => string | undefined,
): Promise<CheckResult> {
  const fail = (why: string): CheckResult => ({ check, ok: false, detail: why });
  let header: Record<string, unknown>;
  try {
    header = decodeProtectedHeader(jws) as Record<string, unknown>;
  } catch {
    return fail('not a compact JWS');
  }
  if (header.alg !== 'ES256') return fail(`alg is ${String(header.alg)}, expected ES256`);
  const kid = typeof header.kid === 'string' ? header.kid : undefined;
  if (!kid) return fail('the JWS header names no kid');
  const jwk = bundle.keys.find((k) => k.kid === kid);
  if (!jwk) return fail(`key ${kid} is not in the bundle's keys`);
  if (
    options.trustedKeys &&
    !options.trustedKeys.some((t) => t.kid === kid && t.x === jwk.x && t.y === jwk.y && t.crv === jwk.crv)
  ) {
    return fail(`key ${kid} is not among the trusted keys`);
  }
  let payload: string;
  try {
    const key = await importJWK({ ...jwk, alg: 'ES256' }, 'ES256');
    const verified = await compactVerify(jws, key, { algorithms: ['ES256'] });
    payload = new TextDecoder().decode(verified.payload);
  } catch (err) {
    return fail(`the signature does not verify with key ${kid} (${(err as Error).message})`);
  }
  const problem = inspect(header, payload);
  return problem ? fail(problem) : { check, ok: true, detail: `ES256, key ${kid}` };
}
