import { API_KEY_SCOPES, defineInternalRoutes } from '@mandate/shared/contract';
import { z } from 'zod';
import { PLANS, ROLES, SUBJECT_ID_MAX, USABLE_KEY_STATUSES } from './wire';

/**
 * Identity's internal routes (/internal/v1): the gateway's credential lookups and mandates'
 * binding of a wallet verification. Called through ContractClient, never listed by the gateway.
 */

export const resolveKeyBody = z.strictObject({
  api_key: z.string().max(200),
  tenant_id: z.string().max(200).optional(),
});

export const resolveSubjectBody = z.strictObject({
  tenant_id: z.string().max(200),
  subject_id: z.string().max(SUBJECT_ID_MAX),
});

export const consumeVerificationBody = z.strictObject({
  mandate_id: z.string().min(1),
  /** The principal's name as the mandate request gives it, if it does: it must be the verified one. */
  principal_name: z.string().min(1).max(256).optional(),
});

export const resolvedKeySchema = z.object({
  key_id: z.string(),
  tenant_id: z.string(),
  scopes: z.array(z.enum(API_KEY_SCOPES)),
  status: z.enum(USABLE_KEY_STATUSES),
  plan: z.enum(PLANS),
  /** A staging key's end of its activation window: the gateway asks again from then on (docs/DECISIONS.md#keys). */
  usable_until: z.string().optional(),
});
export type ResolvedKey = z.output<typeof resolvedKeySchema>;

export const resolvedSubjectSchema = z.object({
  tenant_id: z.string(),
  subject_id: z.string(),
  assignment_id: z.string(),
  roles: z.array(z.enum(ROLES)),
  // Stored with the assignment (a later role table never widens it): strings, not today's list.
  permissions: z.array(z.string()),
  plan: z.enum(PLANS),
});
export type ResolvedSubject = z.output<typeof resolvedSubjectSchema>;

/**
 * The gateway's cache refresh: many lookups in one call, each answered in its place (null where
 * the single lookup would be a 404). One call per refresh tick instead of one per cached credential.
 */
export const RESOLVE_MANY_MAX = 100;
export const resolveKeysBody = z.strictObject({
  items: z.array(resolveKeyBody).min(1).max(RESOLVE_MANY_MAX),
});
export const resolvedKeysSchema = z.object({ results: z.array(resolvedKeySchema.nullable()) });
export const resolveSubjectsBody = z.strictObject({
  items: z.array(resolveSubjectBody).min(1).max(RESOLVE_MANY_MAX),
});
export const resolvedSubjectsSchema = z.object({ results: z.array(resolvedSubjectSchema.nullable()) });

/** A consumed verification: what the mandate's principal.verified holds, and the name it vouches for. */
export const consumedVerificationSchema = z.object({
  principal_name: z.string().min(1),
  verification_id: z.string(),
  assurance: z.literal('HIGH'),
  issuer: z.string(),
  subject_id: z.string(),
  claims_digest: z.string(),
  verified_at: z.string(),
});

/** The gateway's safety-net check: the epoch it knows (none on its first check). */
export const credentialChangesBody = z.strictObject({
  since: z.number().int().min(0).optional(),
});
export const credentialChangeSchema = z.object({
  kind: z.enum(['api_key', 'subject', 'tenant']),
  tenant_id: z.string(),
  id: z.string().optional(),
});
/** `changes` null: not all changes after `since` are known any more (or none was given): drop every cached credential. */
export const credentialChangesSchema = z.object({
  epoch: z.number().int().min(0),
  changes: z.array(credentialChangeSchema).nullable(),
});

/** The credential feed's query: the epoch the gateway knows (none when it knows none). */
export const credentialFeedQuery = z.strictObject({
  since: z
    .string()
    .regex(/^\d{1,15}$/, 'must be a whole number')
    .transform(Number)
    .optional(),
});
/** One line of the feed: what changed after the epoch last written (`[]`: a heartbeat), read at `at` (ms) or later. */
export const credentialFeedLineSchema = credentialChangesSchema.extend({ at: z.number().int() });

/**
 * The gateway's list of usable keys (docs/DECISIONS.md, "Authentication"): by creation time
 * (`created_since`, oldest first, a page at a time), or the given keys again after a change. Each
 * key is known there by the first KEY_HASH_PREFIX_CHARS hex characters of its secret's SHA-256:
 * enough to tell a valid key from a guess, never enough to authenticate.
 */
export const USABLE_KEYS_PAGE_MAX = 10_000;
export const KEY_HASH_PREFIX_CHARS = 16;
export const usableKeysBody = z.union([
  z.strictObject({
    created_since: z.string().datetime().optional(),
    limit: z.number().int().min(1).max(USABLE_KEYS_PAGE_MAX).optional(),
  }),
  z.strictObject({
    keys: z
      .array(z.strictObject({ tenant_id: z.string().max(200), key_id: z.string().max(200) }))
      .min(1)
      .max(RESOLVE_MANY_MAX),
  }),
]);
export const usableKeySchema = z.object({
  tenant_id: z.string(),
  key_id: z.string(),
  created_at: z.string(),
  hash_prefix: z.string(),
});
/** `as_of`: the `created_since` of the next call, so that no key created meanwhile is missed. */
export const usableKeysSchema = z.object({ as_of: z.string(), keys: z.array(usableKeySchema) });
export type UsableKey = z.output<typeof usableKeySchema>;

/** The gateway's report of the keys it served (last_used_at), at most this many per call. */
export const KEYS_USED_MAX = 1000;
export const keysUsedBody = z.strictObject({
  items: z
    .array(z.strictObject({ tenant_id: z.string().max(200), key_id: z.string().max(200) }))
    .min(1)
    .max(KEYS_USED_MAX),
});

type InternalPath = `/internal/v1/${string}`;

/**
 * One of the gateway's credential lookups: a POST (the secret stays out of URLs and logs) that
 * changes nothing, so it is retried; 200 with what was found, 404 for anything else.
 */
const lookup = <const P extends InternalPath, const B extends z.ZodType, const A extends z.ZodType>(
  path: P,
  summary: string,
  [body, answer]: [B, A],
  [found, absent]: [string, string],
) => ({
  summary,
  method: 'POST' as const,
  path,
  service: 'identity' as const,
  idempotent: true,
  request: { body },
  responses: { 200: { description: found, schema: answer } },
  errors: { 404: absent },
});

/** Many lookups of one kind in one call: always 200, one result per item in order, null where the single lookup is a 404. */
const lookupMany = <const P extends InternalPath, const B extends z.ZodType, const A extends z.ZodType>(
  path: P,
  summary: string,
  bodyAndAnswer: [B, A],
) => ({ ...lookup(path, summary, bodyAndAnswer, ['One result per item, in order', '']), errors: {} });

export const internalRoutes = defineInternalRoutes({
  /** API-key authentication: an active or staging key. */
  resolveApiKey: lookup(
    '/internal/v1/keys/resolve',
    'The key behind an API key secret, with its tenant’s plan (the gateway)',
    [resolveKeyBody, resolvedKeySchema],
    ['An active or staging key', 'Unknown, revoked, or another tenant’s key'],
  ),
  /** JWT authentication: the subject's active role assignment in the tenant. */
  resolveSubject: lookup(
    '/internal/v1/subjects/resolve',
    'A subject’s active role assignment in a tenant, with the tenant’s plan (the gateway)',
    [resolveSubjectBody, resolvedSubjectSchema],
    ['The active assignment', 'No active assignment, or no such tenant'],
  ),
  /** The gateway's refresh of the API keys it has cached: each item as resolveApiKey answers it, or null. */
  resolveApiKeys: lookupMany(
    '/internal/v1/keys/resolve-many',
    'The keys behind many API key secrets, each in its place or null (the gateway’s cache refresh)',
    [resolveKeysBody, resolvedKeysSchema],
  ),
  /** The gateway's refresh of the JWT subjects it has cached: each item as resolveSubject answers it, or null. */
  resolveSubjects: lookupMany(
    '/internal/v1/subjects/resolve-many',
    'Many subjects’ active role assignments, each in its place or null (the gateway’s cache refresh)',
    [resolveSubjectsBody, resolvedSubjectsSchema],
  ),
  /** The gateway's credential epoch check (docs/DECISIONS.md, "Credential changes"): a POST that changes nothing. */
  credentialChanges: {
    summary: 'The credential epoch and the credential changes after the one given (the gateway’s safety net)',
    method: 'POST',
    path: '/internal/v1/credentials/changes',
    service: 'identity',
    idempotent: true,
    request: { body: credentialChangesBody },
    responses: { 200: { description: 'The epoch and what changed since', schema: credentialChangesSchema } },
  },
  /**
   * The credential feed (docs/DECISIONS.md, "Credential changes"): an answer held open, one JSON
   * line (credentialFeedLineSchema) per tick or change, ended when the caller's token runs out.
   */
  credentialFeed: {
    summary: 'The credential changes as they happen, a heartbeat line per tick between them (the gateway)',
    method: 'GET',
    path: '/internal/v1/credentials/changes/feed',
    service: 'identity',
    request: { query: credentialFeedQuery },
    responses: {
      200: { description: 'Newline-delimited JSON lines, held open', schema: credentialFeedLineSchema },
    },
  },
  /** The gateway's list of usable keys, which a blocked address's valid keys pass by (docs/DECISIONS.md, "Authentication"). */
  usableKeys: {
    summary: 'Usable API keys by their secret hash’s prefix, created since a time or named (the gateway)',
    method: 'POST',
    path: '/internal/v1/keys/usable',
    service: 'identity',
    idempotent: true,
    request: { body: usableKeysBody },
    responses: {
      200: { description: 'The keys, oldest first, and the time to ask from next', schema: usableKeysSchema },
    },
  },
  /** The gateway's report of the keys it served since its last one: their last_used_at, at most once a minute each. */
  recordKeysUsed: {
    summary: 'Records the use of keys a gateway served from its cache (last_used_at)',
    method: 'POST',
    path: '/internal/v1/keys/used',
    service: 'identity',
    idempotent: true,
    request: { body: keysUsedBody },
    responses: { 200: { description: 'Recorded', schema: z.object({ recorded: z.number().int() }) } },
  },
  /** For mandates: binds a VERIFIED mandate-purpose session of the caller's tenant to one mandate. */
  consumeIdentityVerification: {
    summary: 'Binds a VERIFIED mandate-purpose verification of the caller’s tenant to one mandate',
    method: 'POST',
    path: '/internal/v1/identity-verifications/:id/consume',
    service: 'identity',
    request: { params: z.object({ id: z.string() }), body: consumeVerificationBody },
    responses: { 200: { description: 'The verification, now bound', schema: consumedVerificationSchema } },
    errors: {
      400: 'principal.name is not the verified name, or the body is invalid',
      404: 'Verification not found, or another tenant’s',
      409: 'The verification is not usable (not VERIFIED, too old, already bound, wrong purpose)',
    },
  },
});
