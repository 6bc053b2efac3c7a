import { z } from 'zod';
import {
  ASSURANCE_LEVELS,
  RESOURCE_PATH_MESSAGE,
  isSafeResourcePath,
  type AssuranceLevel,
} from '@mandate/verifier/decide';
import { labelText } from '@mandate/shared/core';
import { BUDGET_PERIODS, isKnownTimeZone } from './budget-period';
import {
  defineInternalRoutes,
  defineRoutes,
  listing,
  listOrderShape,
  listQueryShape,
  routeGroup,
} from '@mandate/shared/contract';
import { budgetRoutes, budgetStateSchema } from './budget-contract';

/**
 * The mandates service's public contract: its wire vocabulary, request and response schemas and
 * routes. The package's entry point: the gateway builds its table and the document from it. Only
 * zod and the shared kernel here — no domain, no express.
 */

export const MANDATE_STATES = ['ACTIVE', 'SUSPENDED', 'REVOKED', 'EXPIRED'] as const;
export type MandateState = (typeof MANDATE_STATES)[number];

export const PARTY_TYPES = ['person', 'organization', 'agent', 'service'] as const;
export type PartyType = (typeof PARTY_TYPES)[number];

const timestamp = z.iso.datetime({
  offset: true,
  error: 'must be an ISO 8601 timestamp, e.g. 2026-11-21T12:00:00.000Z',
});

export const partySchema = z
  .strictObject({
    id: labelText().min(1).max(256),
    type: z.enum(PARTY_TYPES).optional(),
    name: labelText().min(1).max(256).optional(),
  })
  .meta({ id: 'Party' });

/** A string is shorthand for `{id}`; expanded before validation so errors name the nested field. */
const partyInput = z.preprocess((v) => (typeof v === 'string' ? { id: v } : v), partySchema);

// The assurance scale of a wallet verification (lowest first; identity issues HIGH only today) is
// the decision module's, which ranks it and ships in the dependency-free offline verifier; the
// mandates contract is where every service reads it.
export { ASSURANCE_LEVELS, type AssuranceLevel };

/** How the principal was identified: inside the signed fields, so the signature covers it. */
export const principalVerificationSchema = z
  .strictObject({
    method: z.literal('openid4vp'),
    assurance: z.enum(ASSURANCE_LEVELS),
    verification_id: z.string(),
    issuer: z.string(),
    subject_id: z.string(),
    claims_digest: z.string(),
    verified_at: z.string(),
  })
  .meta({ id: 'PrincipalVerification' });

export const principalSchema = partySchema
  .extend({ verified: principalVerificationSchema.optional() })
  .meta({ id: 'Principal' });

/** The principal at creation: a party, optionally naming a VERIFIED wallet verification of the tenant. */
const principalInputObject = partySchema.extend({
  verification_id: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe(
      'A VERIFIED identity verification (purpose mandate) of this tenant, at most 10 minutes old, unused',
    ),
});
const principalInput = z.preprocess((v) => (typeof v === 'string' ? { id: v } : v), principalInputObject);
const principalInputDoc = z.union([z.string().min(1).max(256), principalInputObject]);
/** How the shorthand is documented (the preprocess above is invisible to the OpenAPI generator). */
const partyInputDoc = z.union([z.string().min(1).max(256), partySchema]);

const ACTION = /^(\*|[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*(:\*)?)$/;

/**
 * What the delegate may spend over time (docs/API.md#budgets): signed with the rest of the scope,
 * immutable. Periods are calendar day, ISO week and calendar month in `timezone`; `total` never resets.
 */
export const budgetSchema = z
  .strictObject({
    amount: z
      .number()
      .refine((n) => Number.isSafeInteger(n) && n > 0, { error: 'must be a positive integer (minor units)' }),
    period: z.enum(BUDGET_PERIODS),
    timezone: z
      .string()
      .max(64)
      .refine(isKnownTimeZone, { error: 'must be an IANA timezone name, e.g. Europe/Berlin or UTC' })
      .default('UTC'),
  })
  .meta({ id: 'Budget' });

export const scopeSchema = z
  .strictObject({
    actions: z
      .array(
        z
          .string()
          .max(200)
          .regex(ACTION, { error: 'must be an action like payments:create, payments:* or *' }),
      )
      .min(1)
      .max(100)
      .default(['*']),
    // An empty list must not read as "anything" (docs/API.md, "Verify", fail closed): omit it instead.
    // Printable, NFC, and no dot segment or encoded separator, as written or NFKC-normalised
    // (docs/API.md#verify-input-rules): the rule verify applies to the resource it decides on.
    resources: z
      .array(labelText().min(1).max(512).refine(isSafeResourcePath, { error: RESOURCE_PATH_MESSAGE }))
      .min(1)
      .max(100)
      .optional(),
    constraints: z
      .strictObject({
        max_amount: z
          .number()
          .refine((n) => Number.isSafeInteger(n) && n >= 0, {
            error: 'must be a non-negative integer (minor units)',
          })
          .optional(),
        currency: z
          .string()
          .regex(/^[A-Z]{3}$/, { error: 'must be a 3-letter uppercase ISO 4217 code' })
          .optional(),
      })
      .optional(),
    budget: budgetSchema.optional(),
  })
  // A budget's amounts are in the scope's currency, so it needs one (docs/API.md#budgets).
  .refine((scope) => scope.budget === undefined || scope.constraints?.currency !== undefined, {
    error: 'budget requires constraints.currency (its amounts are in that currency)',
    path: ['budget'],
  })
  .meta({ id: 'Scope' });

export const metadataSchema = z
  .record(labelText().min(1).max(40), labelText().max(500))
  .refine((r) => Object.keys(r).length <= 20, { error: 'must have at most 20 keys' });

export const createMandateBody = z.strictObject({
  principal: principalInput,
  delegate: partyInput,
  scope: scopeSchema.optional(),
  valid_from: timestamp.nullish(),
  expires_at: timestamp.nullish(),
  metadata: metadataSchema.optional(),
});
export type CreateMandateBody = z.output<typeof createMandateBody>;

const createMandateBodyDoc = createMandateBody
  .extend({ principal: principalInputDoc, delegate: partyInputDoc })
  .meta({ id: 'CreateMandateRequest' });

export const lifecycleBody = z
  .strictObject({ reason: labelText().max(500).optional() })
  .meta({ id: 'LifecycleRequest' });

export const listMandatesQuery = z.strictObject({
  state: z.enum(MANDATE_STATES).optional(),
  principal_id: z.string().min(1).max(256).optional(),
  delegate_id: z.string().min(1).max(256).optional(),
  // Literal, case-insensitive substring of the parties' ids and names (docs/API.md, "Mandates"); printable
  // text only, so it can never span two fields of the stored search text.
  q: labelText()
    .min(1)
    .max(200)
    .optional()
    .describe("Part of the principal's or delegate's id or name, any case, matched literally (no wildcards)"),
  ...listQueryShape,
  ...listOrderShape,
});

export const mandateSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    principal: principalSchema,
    delegate: partySchema,
    scope: scopeSchema,
    state: z.enum(MANDATE_STATES),
    valid_from: z.string().nullable(),
    expires_at: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    version: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
    signature: z.object({
      alg: z.literal('ES256'),
      kid: z.string(),
      jws: z
        .string()
        .meta({ description: 'Compact JWS over the RFC 8785 canonical JSON of the immutable fields' }),
    }),
    status: z
      .object({ status_list: z.object({ idx: z.number().int().min(0), uri: z.string() }) })
      .optional()
      .meta({
        description:
          'Signed with the mandate: its entry in a status list (absent on mandates signed before status lists)',
      }),
  })
  .meta({ id: 'Mandate' });
/** The mandate as the mandates service serves it (public reads and the internal read alike). */
export type ServedMandate = z.output<typeof mandateSchema>;

const publicJwkSchema = z.object({
  kty: z.string(),
  crv: z.string(),
  x: z.string(),
  y: z.string(),
  kid: z.string(),
  alg: z.string(),
  use: z.string(),
});
export type PublicJwk = z.output<typeof publicJwkSchema>;

export const jwksSchema = z.object({ keys: z.array(publicJwkSchema) }).meta({ id: 'JWKS' });

const idParams = z.object({ id: z.string().meta({ description: 'Mandate id (mdt_…)' }) });

/** A tenant's mandates, read or changed with an API key of the matching scope. */
const tenantMandates = { service: 'mandates', auth: 'tenant', tags: ['mandates'] } as const;
const mandateReads = routeGroup({ ...tenantMandates, scope: 'mandates:read' });
const mandateWrites = routeGroup({ ...tenantMandates, scope: 'mandates:write' });

const lifecycle = <const O extends 'suspend' | 'reactivate' | 'revoke'>(operation: O, summary: string) =>
  mandateWrites.post(`/v1/mandates/:id/${operation}` as `/v1/mandates/:id/${O}`, {
    summary,
    limit: 'mandates.lifecycle',
    request: { params: idParams, body: lifecycleBody, bodyRequired: false },
    responses: { 200: { description: 'The mandate after the transition', schema: mandateSchema } },
    errors: { 404: 'Mandate not found', 409: 'Transition not allowed from the current state' },
  });

export const routes = defineRoutes({
  createMandate: mandateWrites.post('/v1/mandates', {
    summary: 'Create a signed mandate',
    limit: 'mandates.create',
    request: { body: createMandateBody, bodyDoc: createMandateBodyDoc },
    responses: { 201: { description: 'The new mandate, ACTIVE, version 1', schema: mandateSchema } },
    errors: { 503: 'Signing service unavailable' },
  }),
  listMandates: mandateReads.get('/v1/mandates', {
    summary: 'List mandates, newest first (or oldest first: order=asc), with their total if asked',
    ...listing(listMandatesQuery, 'A page of mandates', mandateSchema),
  }),
  getMandate: mandateReads.get('/v1/mandates/:id', {
    summary: 'Get a mandate',
    request: { params: idParams },
    responses: { 200: { description: 'The mandate', schema: mandateSchema } },
    errors: { 404: 'Mandate not found' },
  }),
  suspendMandate: lifecycle('suspend', 'Suspend a mandate'),
  reactivateMandate: lifecycle('reactivate', 'Reactivate a mandate'),
  revokeMandate: lifecycle('revoke', 'Revoke a mandate'),
  // Budgets and spend authorizations (docs/API.md#budgets).
  ...budgetRoutes,
  getJwks: {
    summary: 'Public keys that check mandate signatures',
    tags: ['mandates'],
    method: 'GET',
    path: '/v1/.well-known/jwks.json',
    service: 'mandates',
    auth: 'public',
    limit: 'public_reads',
    responses: {
      200: {
        description: 'JWK set',
        schema: jwksSchema,
        headers: { 'Cache-Control': 'public, max-age=300' },
      },
    },
  },
  getStatusList: {
    summary:
      'A mandate status list: a statuslist+jwt (application/statuslist+jwt, not JSON), 2 bits per mandate',
    description:
      'Public. ETag and If-None-Match (304); Cache-Control max-age is the list ttl (STATUS_LIST_TTL_SECONDS).',
    tags: ['mandates'],
    method: 'GET',
    path: '/v1/status-lists/:list_id',
    service: 'mandates',
    auth: 'public',
    limit: 'public_reads',
    request: { params: z.object({ list_id: z.string().meta({ description: 'Status list id (sl_…)' }) }) },
    responses: {
      200: {
        description: 'The signed list, a compact JWS (typ statuslist+jwt)',
        schema: z.string(),
        headers: { 'Cache-Control': 'public, max-age=<ttl>', ETag: "The token's entity tag" },
      },
      304: { description: 'Not modified (If-None-Match names the current ETag)', schema: z.string() },
    },
    errors: { 404: 'Status list not found', 503: 'Signing service unavailable' },
  },
});

export * from './budget-contract';

/** Every public route of the service, in the order the gateway lists them. */
export const contract = Object.values(routes);

// ── internal routes (/internal/v1): for verify and audit, called through ContractClient ──

/**
 * Only a SHA-256 hex digest is accepted, never an arbitrary payload: the key that signs mandates
 * must not be usable to sign something that reads like a mandate. The JWS also carries
 * typ "mandate-evidence+jws", so a verifier can tell the two kinds apart by header alone.
 */
export const evidenceSignatureBody = z.strictObject({
  digest: z
    .string()
    .regex(/^[0-9a-f]{64}$/, { error: 'must be a SHA-256 digest in lowercase hex (64 characters)' }),
});

export const evidenceSignatureSchema = z.object({ alg: z.string(), kid: z.string(), jws: z.string() });

/**
 * A tenant log's checkpoint claims (docs/API.md#proving-the-log), exactly these members: the JWS
 * payload is their canonical JSON, typ "audit-checkpoint+jwt", so it can never read as a mandate
 * or an evidence digest.
 */
export const checkpointSignatureBody = z.strictObject({
  tenant_id: z.string().min(1).max(256),
  tree_size: z.int().min(1).max(Number.MAX_SAFE_INTEGER),
  root_hash: z.string().regex(/^[A-Za-z0-9_-]{43}$/, { error: 'must be a 32-byte hash in base64url' }),
  issued_at: z.iso.datetime({ error: 'must be an ISO 8601 instant (UTC)' }),
});

export const internalRoutes = defineInternalRoutes({
  /** The same read as getMandate, the tenant taken from the caller's token; it also refills the snapshot verify missed. */
  readMandate: {
    summary: 'A mandate of the caller’s tenant, for verify (snapshot read-through) and audit (evidence)',
    method: 'GET',
    path: '/internal/v1/mandates/:id',
    service: 'mandates',
    request: { params: z.object({ id: z.string() }) },
    responses: { 200: { description: 'The mandate', schema: mandateSchema } },
    errors: { 404: 'Mandate not found, or another tenant’s' },
  },
  /** A mandate's budget now, for verify's BUDGET_EXCEEDED (docs/API.md#budgets); 404 without a budget. */
  readBudget: {
    summary: 'A mandate’s budget in the current period, for verify',
    method: 'GET',
    path: '/internal/v1/mandates/:id/budget',
    service: 'mandates',
    request: { params: z.object({ id: z.string() }) },
    responses: { 200: { description: 'The budget now', schema: budgetStateSchema } },
    errors: { 404: 'Mandate not found, another tenant’s, or without a budget' },
  },
  /**
   * The audit service signs evidence bundles with the same Signer (local key or KMS) as mandates,
   * so there is one signing configuration and one JWKS.
   */
  signEvidenceDigest: {
    summary: 'A JWS (typ mandate-evidence+jws) over an evidence digest, for a tenant’s evidence export',
    method: 'POST',
    path: '/internal/v1/signatures',
    service: 'mandates',
    // Signing a digest changes nothing, so a retry is safe.
    idempotent: true,
    request: { body: evidenceSignatureBody },
    responses: { 200: { description: 'The signature', schema: evidenceSignatureSchema } },
    errors: { 503: 'Signing service unavailable' },
  },
  /** The audit service's signed checkpoints of a tenant's log, by the same Signer and JWKS. */
  signAuditCheckpoint: {
    summary: 'A JWS (typ audit-checkpoint+jwt) over a tenant log checkpoint, for the audit service',
    method: 'POST',
    path: '/internal/v1/checkpoint-signatures',
    service: 'mandates',
    // Signing changes nothing, so a retry is safe.
    idempotent: true,
    request: { body: checkpointSignatureBody },
    responses: { 200: { description: 'The signature', schema: evidenceSignatureSchema } },
    errors: { 400: 'Invalid claims, or another tenant’s', 503: 'Signing service unavailable' },
  },
});
