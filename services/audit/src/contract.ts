import { z } from 'zod';
import { auditEventSchema, EVENT_TYPES, type EventType } from '@mandate/shared/events';
import { defineRoutes, listing, listOrderShape, listQueryShape, routeGroup } from '@mandate/shared/contract';
import { oneOrNotFound } from './one-or-not-found';
import { webhookRoutes } from './webhook-contract';

export * from './webhook-contract';

/**
 * The audit service's public contract: the request and response schemas and routes of the event
 * reads and the evidence export. The package's entry point. Only zod and the shared kernel here.
 */

const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

/** `type=A,B`: a comma list of event types; an unknown one is a 400 that names it. */
const eventTypeList = z
  .string()
  .max(1000)
  .transform((value, ctx): EventType[] => {
    const parts = value
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    const unknown = parts.filter((p) => !KNOWN_TYPES.has(p));
    if (unknown.length > 0) {
      ctx.addIssue({ code: 'custom', message: `unknown event type ${unknown.join(', ')}` });
      return z.NEVER;
    }
    if (parts.length === 0) {
      ctx.addIssue({ code: 'custom', message: 'must name at least one event type' });
      return z.NEVER;
    }
    return [...new Set(parts)] as EventType[];
  });

const isoInstant = z.iso.datetime({
  offset: true,
  error: 'must be an ISO 8601 datetime, e.g. 2026-11-21T12:00:00.000Z',
});

/** Strict: an unknown query parameter is a 400 naming it, rather than a filter silently ignored. */
export const listEventsQuerySchema = z.strictObject({
  type: eventTypeList.optional(),
  resource_id: z.string().min(1).max(256).optional(),
  key_id: z.string().min(1).max(256).optional(),
  since: isoInstant.optional(),
  until: isoInstant.optional(),
  // A flag, spelled out: anything but true or false is a 400, never read as one of them.
  exclude_dashboard_reads: z.enum(['true', 'false']).optional().meta({
    description:
      "true: leave out the dashboard's own reads, API_CALL events of a GET or HEAD with data.via dashboard (docs/API.md#events). Default false",
  }),
  ...listQueryShape,
  ...listOrderShape,
});
export type ListEventsQuery = z.output<typeof listEventsQuerySchema>;

/** At most this many buckets per answer: a week of hours, a year and a bit of days. */
export const MAX_STATS_BUCKETS = { hour: 168, day: 400 } as const;

/** The window when since is not given: the last 24 hours or 14 days, the current (partial) bucket last. */
export const DEFAULT_STATS_BUCKETS = { hour: 24, day: 14 } as const;

export const verificationStatsQuerySchema = z.strictObject({
  bucket: z.enum(['hour', 'day']).default('hour'),
  since: isoInstant.optional(),
  until: isoInstant.optional(),
});
export type VerificationStatsQuery = z.output<typeof verificationStatsQuerySchema>;

export const verificationStatsSchema = z
  .object({
    bucket: z.enum(['hour', 'day']),
    since: z.string().describe("The first bucket's start: `since` rounded down to the bucket (UTC)"),
    until: z.string().describe('The end of the window (exclusive): `until`, or now, as asked'),
    buckets: z
      .array(
        z.object({
          start: z.string().describe("The bucket's first instant, UTC"),
          allow: z.int().min(0),
          deny: z.int().min(0),
        }),
      )
      .describe('Every bucket of the window, oldest first, 0 where nothing was verified'),
  })
  .meta({ id: 'VerificationStats' });
export type VerificationStats = z.infer<typeof verificationStatsSchema>;

export const eventSchema = auditEventSchema.meta({ id: 'AuditEvent' });

// ── the tamper-evident log (docs/API.md#proving-the-log) ──

const base64urlHash = z.string().describe('A 32-byte SHA-256 hash, base64url without padding');

export const auditCheckpointSchema = z
  .object({
    tenant_id: z.string(),
    tree_size: z.int().min(1).describe('How many events (leaves) the tree holds: seq 1 … tree_size'),
    root_hash: base64urlHash.describe("The RFC 9162 root hash of the tenant's tree of that size"),
    issued_at: z.string().describe('When it was signed'),
    jws: z
      .string()
      .describe(
        'Compact JWS (ES256, typ audit-checkpoint+jwt, a kid of the JWKS) whose payload is the RFC 8785 JSON of {tenant_id, tree_size, root_hash, issued_at}',
      ),
  })
  .meta({ id: 'AuditCheckpoint' });

export const inclusionProofQuerySchema = z.strictObject({
  tree_size: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
});

export const inclusionProofSchema = z
  .object({
    seq: z.int().min(1),
    tree_size: z.int().min(1),
    leaf_hash: base64urlHash.describe('SHA-256(0x00 || RFC 8785 JSON of the event, seq included)'),
    path: z.array(base64urlHash).describe('RFC 9162 §2.1.3 inclusion path, the leaf’s sibling first'),
  })
  .meta({ id: 'InclusionProof' });

export const consistencyProofQuerySchema = z.strictObject({
  from: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  to: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
});

export const consistencyProofSchema = z
  .object({
    from: z.int().min(1),
    to: z.int().min(1),
    path: z.array(base64urlHash).describe('RFC 9162 §2.1.4 consistency proof'),
  })
  .meta({ id: 'ConsistencyProof' });

export const listCheckpointsQuerySchema = z.strictObject({ ...listQueryShape });

const jwkSchema = z.looseObject({
  kty: z.string(),
  crv: z.string().optional(),
  x: z.string().optional(),
  y: z.string().optional(),
  kid: z.string(),
  alg: z.string().optional(),
  use: z.string().optional(),
});

export const evidenceBundleSchema = z
  .object({
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
    checkpoint: auditCheckpointSchema
      .optional()
      .describe("The signed checkpoint of the tenant's log that every event's proof leads to"),
    log_proof: z
      .object({
        leaf_hashes: z
          .array(base64urlHash.nullable())
          .describe(
            'One per listed event, in the same order: its stored leaf hash (leaf seq-1), null for an event without seq (stored before the log)',
          ),
        nodes: z
          .array(base64urlHash)
          .describe(
            "Each once, left to right: the hash of every maximal range of RFC 9162's MTH recursion that holds none of the events' leaves",
          ),
      })
      .optional()
      .describe(
        "One joint inclusion proof (a Merkle multiproof) of every listed event in the checkpoint's tree (docs/API.md#proving-the-log)",
      ),
  })
  .meta({ id: 'EvidenceBundle' });

/** Every audit route: a tenant's own events, read with an API key scoped events:read. */
const events = routeGroup({ service: 'audit', auth: 'tenant', scope: 'events:read', tags: ['events'] });

export const routes = defineRoutes({
  listEvents: events.get('/v1/events', {
    summary: 'List audit events, newest first (or oldest first: order=asc), with their total if asked',
    description:
      `Scope events:read. type is a comma list of: ${EVENT_TYPES.join(', ')}. ` +
      'since is inclusive, until exclusive (occurred_at). key_id matches actor.key_id. ' +
      "exclude_dashboard_reads=true leaves out the dashboard's own reads: API_CALL events of a GET or HEAD whose data.via is dashboard.",
    ...listing(listEventsQuerySchema, 'A page of events', eventSchema),
    errors: { 400: 'Invalid filter, limit or cursor, or an unknown query parameter' },
  }),
  // Before getEvent: /v1/events/:id would take the path otherwise (the first route that matches wins).
  getVerificationStats: events.get('/v1/events/verification-stats', {
    summary: 'Verifications per hour or per day, ALLOW and DENY counted',
    description:
      "Scope events:read. The tenant's VERIFICATION_PERFORMED events with occurred_at in [since, until) " +
      '(until defaults to now), counted by the store per UTC hour or day (bucket, default hour) and by ' +
      'decision — for charts, without paging through the events. since is rounded down to its bucket; ' +
      `without it the window is the last ${DEFAULT_STATS_BUCKETS.hour} hours or ${DEFAULT_STATS_BUCKETS.day} days, ` +
      `the bucket of until last. At most ${MAX_STATS_BUCKETS.hour} hour or ${MAX_STATS_BUCKETS.day} day buckets.`,
    request: { query: verificationStatsQuerySchema },
    responses: { 200: { description: 'ALLOW and DENY per bucket', schema: verificationStatsSchema } },
    errors: {
      400: 'Invalid bucket, since or until, until not after since, too many buckets, or an unknown query parameter',
    },
  }),
  getEvent: events.get('/v1/events/:id', {
    summary: 'Get one audit event',
    ...oneOrNotFound('The event', eventSchema, 'Event not found'),
  }),
  exportEvidence: events.get('/v1/mandates/:id/evidence', {
    summary: 'Export a verifiable evidence bundle for one mandate',
    description:
      'Scope events:read. Streamed, any size. The mandate with its signature, exported_at, every event about it ' +
      'oldest first except EVIDENCE_EXPORTED (counted in evidence_exports), the JWKS entries that check both ' +
      'signatures, digest = sha256 hex of canonical({mandate, exported_at}) + "\\n", then canonical(event) + "\\n" ' +
      'per event, then canonical({evidence_exports}) (RFC 8785), and signature = compact JWS (ES256, typ ' +
      'mandate-evidence+jws) whose payload is the digest. Check it offline with ' +
      'the checker in the repository, `node packages/evidence-cli/bin/mandate-evidence.js verify bundle.json --jwks jwks.json` ' +
      '(docs/VERIFY-AND-IDENTITY.md, "Checking a bundle offline"; never `npx`, which would ask the public registry). Emits EVIDENCE_EXPORTED.',
    // An export reads every event of a mandate: its own bucket, far below the global one.
    limit: 'evidence.export',
    responses: {
      200: {
        description: 'The evidence bundle (streamed)',
        schema: evidenceBundleSchema,
        headers: { 'Cache-Control': 'no-store' },
      },
    },
    errors: {
      404: 'No such mandate for this tenant',
      503: 'The mandates service or the signing key is unavailable',
    },
  }),
  listAuditCheckpoints: events.get('/v1/audit/checkpoints', {
    summary: "List the signed checkpoints of the tenant's log, largest tree_size first",
    description:
      "Scope events:read. Audit signs a checkpoint of each tenant's log at most every AUDIT_CHECKPOINT_SECONDS when it has grown " +
      '(and when an evidence export needs one). docs/API.md, "Proving the log".',
    ...listing(listCheckpointsQuerySchema, 'A page of checkpoints', auditCheckpointSchema),
    errors: { 400: 'Invalid limit or cursor, or an unknown query parameter' },
  }),
  getLatestAuditCheckpoint: events.get('/v1/audit/checkpoints/latest', {
    summary: "The latest signed checkpoint of the tenant's log",
    description: 'Scope events:read. Keep it: a later consistency proof shows the log has only grown since.',
    ...oneOrNotFound('The checkpoint of the largest tree_size', auditCheckpointSchema, 'No checkpoint yet'),
  }),
  getInclusionProof: events.get('/v1/events/:id/inclusion-proof', {
    summary: "Prove an event is in the tenant's log (RFC 9162 §2.1.3)",
    description:
      'Scope events:read. tree_size must be that of a signed checkpoint at or above the event’s seq. ' +
      'Verify: leaf_hash = SHA-256(0x00 || RFC 8785 JSON of the event as served), path against the checkpoint’s root_hash.',
    request: { query: inclusionProofQuerySchema },
    responses: { 200: { description: 'The inclusion proof', schema: inclusionProofSchema } },
    errors: {
      400: 'tree_size is not a signed checkpoint’s, the event is not in that tree or has no seq, or an unknown query parameter',
      404: 'Event not found',
    },
  }),
  getConsistencyProof: events.get('/v1/audit/consistency-proof', {
    summary: "Prove the tenant's log of size to extends the log of size from (RFC 9162 §2.1.4)",
    description: 'Scope events:read. from and to must be tree sizes of signed checkpoints, from ≤ to.',
    request: { query: consistencyProofQuerySchema },
    responses: { 200: { description: 'The consistency proof', schema: consistencyProofSchema } },
    errors: {
      400: 'from or to is not a signed checkpoint’s tree_size, from above to, or an unknown query parameter',
    },
  }),
  ...webhookRoutes,
});

export const contract = Object.values(routes);
