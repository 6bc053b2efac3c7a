import { decodeProtectedHeader } from 'jose';
import { AppError, serviceUnavailable, type Clock } from '@mandate/shared/core';
import { EvidenceDigest } from '@mandate/shared/mandate';
import { type AuditEvent } from '@mandate/shared/events';
import { checkpointNow, logProofParts, type CheckpointSigner } from '../domain/log';
import type { AuditStore, StoredCheckpoint } from '../store/event-store';
import type { EvidenceMandate, PublicJwk } from './bundle';
import type { CallContext, MandatesSource } from './mandates-source';

export class EvidenceMandateNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Mandate not found');
  }
}

/** The events changed between the hashing pass and the writing pass; the bundle already begun must be abandoned. */
export class EvidenceChangedDuringExport extends Error {}

export interface EvidenceDeps {
  store: AuditStore;
  mandates: MandatesSource;
  clock: Clock;
  /** Signs a checkpoint when none covers the bundle's events yet (docs/API.md#proving-the-log). */
  signCheckpoint?: CheckpointSigner;
}

/** Where the bundle goes: the first write starts the 200 response; a write resolves once the bytes are taken (back-pressure). */
export interface EvidenceSink {
  write(chunk: string): Promise<void>;
}

/** What the EVIDENCE_EXPORTED event records. */
export interface EvidenceSummary {
  mandateId: string;
  digest: string;
  exported_at: string;
  event_count: number;
  evidence_exports: number;
  kids: string[];
}

const EXPORTED: AuditEvent['type'] = 'EVIDENCE_EXPORTED';
/** Bytes gathered before one write to the socket. */
const CHUNK_CHARS = 64 * 1024;

/**
 * Streams the evidence bundle (v2, docs/API.md, "Evidence export") in bounded memory, whatever the number of events:
 * `{mandate, exported_at, events, evidence_exports, keys, digest, signature}` (the digest is
 * defined in packages/shared/src/mandate/evidence-digest.ts). Two passes over the store's cursor: the
 * first only hashes, so the signature (and any 404/503) is settled before the first byte; the
 * second writes the same events, up to the last id the first saw, and hashes them again. Earlier
 * EVIDENCE_EXPORTED events are counted, not listed, so exporting never grows the next bundle.
 */
export async function exportEvidence(
  deps: EvidenceDeps,
  ctx: CallContext,
  mandateId: string,
  sink: EvidenceSink,
): Promise<EvidenceSummary> {
  const mandate = await deps.mandates.getMandate(ctx, mandateId);
  if (!mandate) throw new EvidenceMandateNotFound();
  const exported_at = deps.clock.now().toISOString();

  const first = await hashPass(deps.store, ctx.tenantId, mandate, exported_at, undefined);
  const { jws } = await deps.mandates.signDigest(ctx, first.digest);
  const kid = decodeProtectedHeader(jws).kid;
  const keys = await keysFor(deps.mandates, ctx, [mandate.signature.kid, kid]);

  const checkpoint = await checkpointFor(deps, ctx.tenantId, first.maxSeq);

  // No event in the first pass: '' keeps every later arrival out of the second.
  const second = await hashPass(deps.store, ctx.tenantId, mandate, exported_at, first.lastId ?? '', sink);
  if (second.digest !== first.digest) throw new EvidenceChangedDuringExport(`mandate ${mandate.id}`);
  await sink.write(
    `],"evidence_exports":${second.evidenceExports},"keys":${JSON.stringify(keys)},` +
      `"digest":${JSON.stringify(second.digest)},"signature":${JSON.stringify(jws)}`,
  );
  if (checkpoint) await writeLogProof(deps.store, ctx.tenantId, checkpoint, second.seqs, sink);
  await sink.write('}');
  return {
    mandateId: mandate.id,
    digest: second.digest,
    exported_at,
    event_count: second.listed,
    evidence_exports: second.evidenceExports,
    kids: keys.map((k) => k.kid).filter((k): k is string => typeof k === 'string'),
  };
}

/**
 * The checkpoint the bundle's log proof leads to (docs/API.md#proving-the-log): the latest, or a new
 * one when the latest does not cover every listed event yet. None when the tenant has no log or
 * no checkpoint can be signed: the bundle then carries no log proof, and the checker says so.
 */
async function checkpointFor(
  deps: EvidenceDeps,
  tenantId: string,
  maxSeq: number,
): Promise<StoredCheckpoint | null> {
  const latest = await deps.store.latestCheckpoint(tenantId);
  if (latest && latest.tree_size >= maxSeq) return latest;
  if (!deps.signCheckpoint) return null;
  const made = await checkpointNow(deps.store, deps.signCheckpoint, tenantId, deps.clock);
  return made && made.tree_size >= maxSeq ? made : null;
}

/**
 * `,"checkpoint":{…},"log_proof":{"leaf_hashes":[…],"nodes":[…]}`: one joint inclusion proof of
 * the listed events, each shared hash once (docs/API.md#proving-the-log).
 */
async function writeLogProof(
  store: AuditStore,
  tenantId: string,
  checkpoint: StoredCheckpoint,
  seqs: (number | undefined)[],
  sink: EvidenceSink,
): Promise<void> {
  await sink.write(`,"checkpoint":${JSON.stringify(checkpoint)},"log_proof":{"leaf_hashes":[`);
  let list = 'leaf_hashes';
  let first = true;
  for await (const part of logProofParts(store, tenantId, seqs, checkpoint.tree_size)) {
    if (part.list !== list) {
      await sink.write('],"nodes":[');
      list = part.list;
      first = true;
    }
    if (part.items.length === 0) continue;
    await sink.write((first ? '' : ',') + part.items.join(','));
    first = false;
  }
  await sink.write(list === 'leaf_hashes' ? '],"nodes":[]}' : ']}');
}

/**
 * One walk over the mandate's events, oldest first: hashes them and, given a sink, writes the
 * bundle up to its events array. With `upTo`, events with a later id (arrived since the first
 * pass) are left out.
 */
async function hashPass(
  store: AuditStore,
  tenantId: string,
  mandate: EvidenceMandate,
  exported_at: string,
  upTo: string | undefined,
  sink?: EvidenceSink,
): Promise<{
  digest: string;
  lastId: string | undefined;
  listed: number;
  evidenceExports: number;
  maxSeq: number;
  seqs: (number | undefined)[];
}> {
  const digest = new EvidenceDigest({ mandate, exported_at });
  let evidenceExports = 0;
  let lastId: string | undefined;
  let maxSeq = 0;
  // The listed events' seqs, for the log proof written after them (numbers only, not the events).
  const seqs: (number | undefined)[] = [];
  let pending = sink
    ? `{"mandate":${JSON.stringify(mandate)},"exported_at":${JSON.stringify(exported_at)},"events":[`
    : '';
  for await (const event of store.readByResource(tenantId, mandate.id)) {
    if (upTo !== undefined && event.id > upTo) continue;
    lastId = event.id;
    if (event.type === EXPORTED) {
      evidenceExports++;
      continue;
    }
    const line = digest.addEvent(event);
    if (event.seq !== undefined && event.seq > maxSeq) maxSeq = event.seq;
    if (!sink) continue;
    seqs.push(event.seq);
    pending += digest.eventCount === 1 ? line : ',' + line;
    if (pending.length >= CHUNK_CHARS) {
      await sink.write(pending);
      pending = '';
    }
  }
  if (sink && pending.length > 0) await sink.write(pending);
  return {
    digest: digest.finish(evidenceExports),
    lastId,
    listed: digest.eventCount,
    evidenceExports,
    maxSeq,
    seqs,
  };
}

/** The JWKS entries with these kids; the signing kid must be published (a rotation under way: asked once more). */
async function keysFor(
  mandates: MandatesSource,
  ctx: CallContext,
  kids: (string | undefined)[],
): Promise<PublicJwk[]> {
  const signingKid = kids[kids.length - 1];
  for (let attempt = 0; attempt < 2; attempt++) {
    const jwks = await mandates.publicKeys(ctx);
    if (jwks.some((k) => k.kid === signingKid)) return neededKeys(jwks, kids);
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
