import { z } from 'zod';
import { API_CALL_VIA, EVENT_TYPES } from './event-types';

/**
 * The `data` of every event type (docs/API.md, "Events"): the contract of the webhooks integrators
 * receive, as a route's schema is of its answer. Each group below is owned by the service that
 * produces its types and changes only with it; they live here, in the kernel, because buildEvent
 * types its input by them and audit, which stores and sends every type (the gateway's API_CALL
 * too), may import no service the gateway imports back (docs/DECISIONS.md, "Event data schemas").
 *
 * A producer's literal may hold no field its schema does not name (a compile error); a parse
 * ignores unknown fields, so a reader relies on the named ones only. No field holds a secret or a
 * claim value.
 */

const iso = z.string().meta({ description: 'ISO 8601 time' });
const ids = (description: string) => z.string().meta({ description });

// ── gateway (services/gateway) ──────────────────────────────────────────────────────────────────
const gatewayEvents = {
  API_CALL: z.object({
    method: z.string(),
    route: z.string().meta({ description: 'The route template, e.g. /v1/mandates/{id}' }),
    path: z.string(),
    status: z.int(),
    duration_ms: z.number(),
    key_id: z
      .string()
      .nullable()
      .meta({ description: 'The API key that called; null for a person or the operator' }),
    subject_id: z.string().nullable().meta({ description: 'The signed-in person that called, if one did' }),
    // Optional: events recorded before it existed lack it, and read as `api` (docs/API.md#audit-of-every-call).
    via: z.enum(API_CALL_VIA).optional().meta({
      description:
        'dashboard: a person signed in to the dashboard made the call (X-Mandate-Client: dashboard with a sign-in token, never an API key); api: any other call. Absent on calls recorded before it was added',
    }),
  }),
};

// ── mandates (services/mandates) ────────────────────────────────────────────────────────────────
const mandateState = z.enum(['ACTIVE', 'SUSPENDED', 'REVOKED', 'EXPIRED']);
/** A lifecycle change: the state before and after, the version after, and the reason if one was given. */
const mandateTransition = z.object({
  previous_state: mandateState,
  state: mandateState,
  version: z.int(),
  reason: z.string().optional(),
});
const authorizationChange = z.object({
  authorization: z.object({
    id: ids('sau_…'),
    mandate_id: z.string(),
    action: z.string(),
    resource: z.string().nullable(),
    amount: z.int(),
    currency: z.string(),
    status: z.enum(['HELD', 'CAPTURED', 'VOIDED', 'EXPIRED']),
    captured_amount: z.int(),
    period_start: z.string(),
    expires_at: iso,
    created_at: iso,
    updated_at: iso,
  }),
  budget: z
    .looseObject({
      amount: z.int(),
      currency: z.string(),
      period: z.string(),
      timezone: z.string(),
      period_start: z.string(),
      period_end: z.string().nullable(),
      captured: z.int(),
      held: z.int(),
      available: z.int(),
    })
    .nullable()
    .meta({ description: 'The budget after the change; null for a mandate without one' }),
});
const mandatesEvents = {
  MANDATE_CREATED: z
    .looseObject({
      id: ids('The mandate id'),
      tenant_id: z.string(),
      principal: z.object({ id: z.string() }),
      delegate: z.object({ id: z.string() }),
      scope: z.record(z.string(), z.unknown()).meta({ description: 'What the mandate allows' }),
      state: mandateState,
      valid_from: iso.nullable(),
      expires_at: iso.nullable(),
      metadata: z.record(z.string(), z.string()),
      version: z.int(),
      created_at: iso,
      updated_at: iso,
      signature: z.object({ alg: z.string(), kid: z.string(), jws: z.string() }),
    })
    .meta({ description: 'The mandate as created (docs/API.md, "Mandates")' }),
  MANDATE_SUSPENDED: mandateTransition,
  MANDATE_REACTIVATED: mandateTransition,
  MANDATE_REVOKED: mandateTransition,
  MANDATE_EXPIRED: mandateTransition.extend({ expires_at: iso.nullable() }),
  STATUS_LIST_PUBLISHED: z.object({
    list_id: z.string(),
    uri: z.string(),
    digest: z.string(),
    iat: z.int(),
    exp: z.int(),
  }),
  AUTHORIZATION_HELD: authorizationChange,
  AUTHORIZATION_CAPTURED: authorizationChange,
  AUTHORIZATION_VOIDED: authorizationChange,
  AUTHORIZATION_EXPIRED: authorizationChange,
};

// ── verify (services/verify) ────────────────────────────────────────────────────────────────────
const verifyEvents = {
  VERIFICATION_PERFORMED: z.object({
    input: z
      .object({
        mandate_id: z.string(),
        action: z.string(),
        resource: z.string().optional(),
        amount: z.number().optional(),
        currency: z.string().optional(),
        delegate_id: z.string().optional(),
        min_assurance: z.string().optional(),
      })
      .meta({ description: 'The verification request as asked' }),
    decision: z.enum(['ALLOW', 'DENY']),
    reason: z.string().meta({ description: 'OK, or the deny reason (docs/API.md, "Verify")' }),
    decision_id: ids('dec_…'),
    mandate_version: z.int(),
  }),
};

// ── audit (services/audit; webhooks: docs/WEBHOOKS.md) ──────────────────────────────────────────
const endpointState = {
  url: z.string(),
  event_types: z.array(z.string()),
  status: z.enum(['ENABLED', 'DISABLED']),
};
const auditEvents = {
  EVIDENCE_EXPORTED: z.object({
    digest: z.string(),
    exported_at: iso,
    event_count: z.int(),
    evidence_exports: z.int(),
    kids: z.array(z.string()),
  }),
  WEBHOOK_ENDPOINT_CREATED: z.object({ endpoint_id: z.string(), ...endpointState }),
  WEBHOOK_ENDPOINT_UPDATED: z.object({
    endpoint_id: z.string(),
    changed: z
      .array(z.string())
      .meta({ description: 'The fields the request set, or ["secret"] for a rotation' }),
    // The state after an update; a secret rotation tells when the previous secret stops instead.
    url: endpointState.url.optional(),
    event_types: endpointState.event_types.optional(),
    status: endpointState.status.optional(),
    previous_secret_expires_at: iso.nullable().optional(),
  }),
  WEBHOOK_ENDPOINT_DELETED: z.object({ endpoint_id: z.string(), url: z.string() }),
  WEBHOOK_ENDPOINT_DISABLED: z.object({
    endpoint_id: z.string(),
    url: z.string(),
    reason: z.literal('failing'),
    failing_since: iso,
  }),
};

// ── identity (services/identity) ────────────────────────────────────────────────────────────────
const apiKeyChange = z.object({
  key_id: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  status: z.string(),
  replaces_key_id: z.string().nullable(),
  reason: z.string().optional(),
  replaced_by_key_id: z.string().nullable().optional(),
});
const roleAssignmentChange = z.object({
  id: z.string(),
  subject_id: z.string(),
  roles: z.array(z.string()),
  permissions: z.array(z.string()),
  status: z.string(),
  previous_roles: z.array(z.string()).optional(),
});
const onboardingChange = z.object({
  id: z.string(),
  organization_name: z.string(),
  country: z.string().nullable(),
  status: z.enum(['PENDING', 'APPROVED', 'REJECTED']),
  tenant_id: z.string().nullable(),
});
const identityEvents = {
  API_KEY_CREATED: apiKeyChange,
  API_KEY_ROTATED: apiKeyChange,
  API_KEY_ACTIVATED: apiKeyChange.extend({
    grace_seconds: z.int().optional(),
    replaced_key_grace_ends_at: iso.optional(),
  }),
  API_KEY_REVOKED: apiKeyChange,
  TENANT_CREATED: z.object({
    id: z.string(),
    name: z.string(),
    plan: z.string(),
    status: z.string(),
    created_at: iso,
  }),
  TENANT_ROLE_ASSIGNED: roleAssignmentChange,
  TENANT_ROLE_REVOKED: roleAssignmentChange,
  ONBOARDING_REQUESTED: onboardingChange,
  ONBOARDING_APPROVED: onboardingChange,
  ONBOARDING_REJECTED: onboardingChange.extend({ reason: z.string().nullable() }),
  WIDGET_CONFIG_UPDATED: z.object({
    allowed_origins: z.array(z.string()),
    theme: z.object({ primary_color: z.string().optional(), logo_url: z.string().optional() }),
    locale: z.string().nullable(),
    updated_at: iso.nullable(),
  }),
  ACCESS_BASELINE_SAVED: z.object({
    saved_at: iso,
    api_keys: z.int(),
    role_assignments: z.int(),
    widget_allowed_origins: z.int(),
    truncated: z.boolean(),
  }),
  IDENTITY_VERIFICATION_STARTED: z.object({
    verification_id: z.string(),
    purpose: z.string(),
    expires_at: iso,
  }),
  IDENTITY_VERIFIED: z.object({
    verification_id: z.string(),
    purpose: z.string(),
    assurance: z.string(),
    issuer: z.string(),
    subject_id: z.string(),
    claims_digest: z.string(),
  }),
  IDENTITY_VERIFICATION_FAILED: z.object({
    verification_id: z.string(),
    purpose: z.string(),
    reason: z.string(),
  }),
};

/** Every type's data schema; the `satisfies` makes a type without one (or one without a type) a compile error. */
export const EVENT_DATA_SCHEMAS = {
  ...gatewayEvents,
  ...mandatesEvents,
  ...verifyEvents,
  ...auditEvents,
  ...identityEvents,
} satisfies Record<(typeof EVENT_TYPES)[number], z.ZodType>;

type Schemas = typeof EVENT_DATA_SCHEMAS;
/** What a producer passes as an event's data: the schema's input. */
export type EventData<T extends keyof Schemas> = z.input<Schemas[T]>;

/** Which service produces each type (the owner of its schema), for the docs and the OpenAPI document. */
export const EVENT_OWNERS = Object.fromEntries([
  ...Object.keys(gatewayEvents).map((t) => [t, 'gateway']),
  ...Object.keys(mandatesEvents).map((t) => [t, 'mandates']),
  ...Object.keys(verifyEvents).map((t) => [t, 'verify']),
  ...Object.keys(auditEvents).map((t) => [t, 'audit']),
  ...Object.keys(identityEvents).map((t) => [t, 'identity']),
]) as Record<keyof Schemas, string>;

/**
 * An event's data read by its type's schema: what a consumer relies on, checked, instead of
 * fields picked by hand. Throws (a ZodError) on data off its schema.
 */
export function parseEventData<T extends keyof Schemas>(type: T, data: unknown): z.output<Schemas[T]> {
  return EVENT_DATA_SCHEMAS[type].parse(data) as z.output<Schemas[T]>;
}

/**
 * An event's data read by its type's schema, or null when it is off it: for a consumer that goes on
 * past such an event rather than stop on it (the gateway's credential push: its epoch check
 * catches what a skipped event would have dropped).
 */
export function eventDataOrNull<T extends keyof Schemas>(
  type: T,
  data: unknown,
): z.output<Schemas[T]> | null {
  const r = EVENT_DATA_SCHEMAS[type].safeParse(data);
  return r.success ? (r.data as z.output<Schemas[T]>) : null;
}

/** The same check without throwing: the issues of data off its type's schema, none when it holds. */
export function eventDataIssues(type: keyof Schemas, data: unknown): string[] {
  const r = EVENT_DATA_SCHEMAS[type].safeParse(data);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.') || '(data)'}: ${i.message}`);
}
