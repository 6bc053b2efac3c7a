// No imports: the dashboard's browser bundle reads this list too (packages/dashboard/src/evidence/shared.ts).
/** Every audit event type the product emits (docs/API.md, "Events"). */
export const EVENT_TYPES = [
  'API_CALL',
  'MANDATE_CREATED',
  'MANDATE_SUSPENDED',
  'MANDATE_REACTIVATED',
  'MANDATE_REVOKED',
  'MANDATE_EXPIRED',
  'VERIFICATION_PERFORMED',
  'EVIDENCE_EXPORTED',
  'API_KEY_CREATED',
  'API_KEY_ROTATED',
  'API_KEY_ACTIVATED',
  'API_KEY_REVOKED',
  'TENANT_CREATED',
  'TENANT_ROLE_ASSIGNED',
  'TENANT_ROLE_REVOKED',
  'ONBOARDING_REQUESTED',
  'ONBOARDING_APPROVED',
  'ONBOARDING_REJECTED',
  'WIDGET_CONFIG_UPDATED',
  // Drift monitoring: a tenant saved its access baseline (counts only; the snapshot stays in identity).
  'ACCESS_BASELINE_SAVED',
  // Identity verification with a wallet: ids, purpose, reason, assurance and a claims digest only.
  'IDENTITY_VERIFICATION_STARTED',
  'IDENTITY_VERIFIED',
  'IDENTITY_VERIFICATION_FAILED',
  // A mandate status list changed and was signed anew (docs/DECISIONS.md, "Status lists (v3)"); a platform event (no tenant).
  'STATUS_LIST_PUBLISHED',
  // Webhook endpoints (docs/WEBHOOKS.md): created, updated (secret rotation included), deleted, and disabled
  // by the delivery worker after failing for days. Ids, url and states only, never a secret.
  'WEBHOOK_ENDPOINT_CREATED',
  'WEBHOOK_ENDPOINT_UPDATED',
  'WEBHOOK_ENDPOINT_DELETED',
  'WEBHOOK_ENDPOINT_DISABLED',
  // Spend authorizations against a mandate's budget (docs/API.md#budgets): the authorization and
  // the budget after the change.
  'AUTHORIZATION_HELD',
  'AUTHORIZATION_CAPTURED',
  'AUTHORIZATION_VOIDED',
  'AUTHORIZATION_EXPIRED',
] as const;

/**
 * What each event type means, in one sentence: the one catalogue of these texts. The OpenAPI
 * document's webhooks describe each type with it, and the dashboard's event-type picker shows it
 * beside each type (docs/WEBHOOKS.md, "Endpoints"). Every type has one (the Record says so).
 */
export const EVENT_TYPE_DESCRIPTIONS: Record<(typeof EVENT_TYPES)[number], string> = {
  API_CALL: 'An authenticated call to the API: method, route, status, duration and who called.',
  MANDATE_CREATED: 'A mandate was created.',
  MANDATE_SUSPENDED: 'A mandate was suspended: it allows nothing until reactivated.',
  MANDATE_REACTIVATED: 'A suspended mandate was reactivated.',
  MANDATE_REVOKED: 'A mandate was revoked, for good.',
  MANDATE_EXPIRED: 'A mandate reached its end and expired.',
  VERIFICATION_PERFORMED: 'An action was verified against a mandate: the decision and its reason.',
  EVIDENCE_EXPORTED: 'A mandate’s evidence bundle was exported.',
  API_KEY_CREATED: 'An API key was created.',
  API_KEY_ROTATED: 'An API key was rotated: a successor key was issued.',
  API_KEY_ACTIVATED: 'A rotated key’s successor was activated; the old key stops after its grace period.',
  API_KEY_REVOKED: 'An API key was revoked: it stops working at once.',
  TENANT_CREATED: 'A tenant was created.',
  TENANT_ROLE_ASSIGNED: 'A role was assigned to a person in the tenant.',
  TENANT_ROLE_REVOKED: 'A person’s role in the tenant was revoked.',
  ONBOARDING_REQUESTED: 'Someone asked to onboard a new tenant.',
  ONBOARDING_APPROVED: 'An onboarding request was approved.',
  ONBOARDING_REJECTED: 'An onboarding request was rejected.',
  WIDGET_CONFIG_UPDATED: 'The tenant’s widget settings changed.',
  ACCESS_BASELINE_SAVED: 'The tenant saved its access baseline for drift monitoring (counts only).',
  IDENTITY_VERIFICATION_STARTED: 'A wallet identity verification was started.',
  IDENTITY_VERIFIED: 'A person proved their identity with a wallet (never a claim value).',
  IDENTITY_VERIFICATION_FAILED: 'A wallet identity verification failed, with the reason.',
  STATUS_LIST_PUBLISHED: 'A mandate status list changed and was signed anew (a platform event).',
  WEBHOOK_ENDPOINT_CREATED: 'A webhook endpoint was created.',
  WEBHOOK_ENDPOINT_UPDATED: 'A webhook endpoint changed (url, event types, status or a secret rotation).',
  WEBHOOK_ENDPOINT_DELETED: 'A webhook endpoint was deleted.',
  WEBHOOK_ENDPOINT_DISABLED: 'A webhook endpoint was disabled after failing for 5 days.',
  AUTHORIZATION_HELD: 'An amount was held against a mandate’s budget.',
  AUTHORIZATION_CAPTURED: 'A held amount was captured: it is spent.',
  AUTHORIZATION_VOIDED: 'A held amount was voided and returned to the budget.',
  AUTHORIZATION_EXPIRED: 'A hold expired uncaptured and returned to the budget.',
};

/**
 * How an API call reached the API, as its API_CALL records it (`data.via`, docs/API.md#audit-of-every-call):
 * `dashboard` when a person signed in to the dashboard made it, `api` otherwise.
 */
export const API_CALL_VIA = ['api', 'dashboard'] as const;

/**
 * The header the dashboard sends with every call (`X-Mandate-Client: dashboard`). With a sign-in
 * token (a person's JWT, the operator token) it makes the call's API_CALL `via: "dashboard"`; an
 * API key's call is `api` whatever it sends, so a program's reads never hide among the dashboard's.
 */
export const CLIENT_HEADER = 'X-Mandate-Client';
