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
