import { decodeProtectedHeader } from 'jose';
import { AppError, serviceUnavailable, type Clock } from '@mandate/shared';
import type { EventStore } from '../store/event-store';
import { evidenceDigest, type EvidenceBundle, type PublicJwk } from './bundle';
import type { CallContext, MandatesSource } from './mandates-source';

/**
 * A bundle must hold every event or none: one silently cut short would be false evidence. Past
 * this many events the export is refused (a later issue can stream or split it).
 */
export const MAX_EVIDENCE_EVENTS = 10_000;

export class EvidenceMandateNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Mandate not found');
  }
}

export interface EvidenceDeps {
  store: EventStore;
  mandates: MandatesSource;
  clock: Clock;
}

/**
 * Builds SPEC §5's evidence bundle: the mandate as served, its events oldest first, the public
 * keys that check both signatures, the digest of all that, and the mandates service's signature
 * over the digest. Another tenant's mandate is NOT_FOUND, as an absent one.
 */
export async function exportEvidence(
  deps: EvidenceDeps,
  ctx: CallContext,
  mandateId: string,
): Promise<EvidenceBundle> {
  const mandate = await deps.mandates.getMandate(ctx, mandateId);
  if (!mandate) throw new EvidenceMandateNotFound();

  const events = await deps.store.listByResource(ctx.tenantId, mandate.id, MAX_EVIDENCE_EVENTS);
  if (events.length > MAX_EVIDENCE_EVENTS) {
    throw new AppError(
      'PAYLOAD_TOO_LARGE',
      `Mandate has more than ${MAX_EVIDENCE_EVENTS} events; the evidence export holds at most ${MAX_EVIDENCE_EVENTS}`,
    );
  }

  // The keys are part of the digest, so the signing key must be known before signing: it is the
  // first JWKS entry. A rotation between the two calls shows up as another kid; then once more.
  for (let attempt = 0; attempt < 2; attempt++) {
    const jwks = await deps.mandates.publicKeys(ctx);
    const keys = neededKeys(jwks, [mandate.signature.kid, jwks[0]?.kid]);
    const exported_at = deps.clock.now().toISOString();
    const digest = evidenceDigest({ mandate, events, keys, exported_at });
    const { jws } = await deps.mandates.signDigest(ctx, digest);
    const { kid } = decodeProtectedHeader(jws);
    if (keys.some((k) => k.kid === kid))
      return { mandate, events, keys, exported_at, digest, signature: jws };
  }
  throw serviceUnavailable('Signing key changed during the export; retry the request');
}

/** The JWKS entries with these kids, in JWKS order, each once. A retired, unpublished kid is simply absent. */
function neededKeys(jwks: PublicJwk[], kids: (string | undefined)[]): PublicJwk[] {
  const wanted = new Set(kids.filter((k): k is string => !!k));
  return jwks.filter(
    (k, i) => k.kid !== undefined && wanted.has(k.kid) && jwks.findIndex((o) => o.kid === k.kid) === i,
  );
}
