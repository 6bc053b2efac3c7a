import { API_KEY_SCOPES, type Scope } from '@mandate/shared/contract';

/**
 * Identity's wire vocabulary: the values, bounds and checks its requests and responses are made
 * of. The contract owns them; the domain speaks them (it imports them from here).
 */

// ── tenants ──
export const PLANS = ['beta', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

export const TENANT_STATUSES = ['active'] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];

export const TENANT_NAME_MAX = 200;

// ── API keys ──
/** The scopes an API key can hold: the shared kernel's list, the one the gateway checks. */
export { API_KEY_SCOPES };
export type ApiKeyScope = Scope;

export const API_KEY_STATUSES = ['active', 'staging', 'revoked'] as const;
export type ApiKeyStatus = (typeof API_KEY_STATUSES)[number];
/** The statuses that authenticate (a staging key does, until its window closes). */
export const USABLE_KEY_STATUSES = ['active', 'staging'] as const satisfies readonly ApiKeyStatus[];
export type UsableKeyStatus = (typeof USABLE_KEY_STATUSES)[number];

export const API_KEY_NAME_MAX = 100;
/** The longest rotation grace period an activation may give, 7 days (docs/API.md#api-key-rotation-grace). */
export const MAX_ROTATION_GRACE_SECONDS = 604_800;

// ── onboarding ──
export const ONBOARDING_STATUSES = ['PENDING', 'APPROVED', 'REJECTED'] as const;
export type OnboardingStatus = (typeof ONBOARDING_STATUSES)[number];

export const ORGANIZATION_NAME_MAX = 200;
export const USE_CASE_MAX = 1000;
export const REJECTION_REASON_MAX = 500;

/**
 * "Real-looking": a local part of the characters RFC 5322 allows unquoted, a domain of valid DNS
 * labels and an alphabetic TLD. No attempt at full RFC 5322 (quoted local parts, IP literals).
 */
export const EMAIL_PATTERN =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;
export const EMAIL_MAX = 254;
export const EMAIL_LOCAL_MAX = 64;

export function isRealLookingEmail(value: string): boolean {
  const at = value.lastIndexOf('@');
  return value.length <= EMAIL_MAX && at > 0 && at <= EMAIL_LOCAL_MAX && EMAIL_PATTERN.test(value);
}

// ── roles ──
/** The roles a tenant can assign (the permissions each grants are the domain's). */
export const ROLES = ['tenant_admin', 'tenant_operator', 'tenant_viewer', 'tenant_auditor'] as const;
export type Role = (typeof ROLES)[number];

/** What a JWT caller may hold: every API key scope, and the tenant configuration's read and write. */
export const PERMISSIONS = [...API_KEY_SCOPES, 'tenant:read', 'tenant:write'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** The permissions each role grants (docs/API.md, "Scopes, permissions and roles"). */
export const ROLE_PERMISSIONS = {
  tenant_admin: [
    'tenant:read',
    'tenant:write',
    'tenants:admin',
    'mandates:read',
    'mandates:write',
    'verify',
    'events:read',
  ],
  tenant_operator: ['mandates:read', 'mandates:write', 'verify', 'events:read'],
  tenant_viewer: ['tenant:read', 'mandates:read'],
  tenant_auditor: ['tenant:read', 'mandates:read', 'events:read'],
} as const satisfies Record<Role, readonly Permission[]>;

/** Each permission in words, for a person choosing a role (docs/API.md, "Scopes, permissions and roles"). */
export const PERMISSION_DESCRIPTIONS = {
  'tenant:read': "see the tenant's API keys, roles, webhooks and settings",
  'tenant:write': "change the tenant's API keys, roles, webhooks and settings",
  'tenants:admin': 'everything an API key with tenants:admin may do',
  'mandates:read': 'read mandates and their budgets',
  'mandates:write': 'create, suspend, reactivate and revoke mandates, and hold budget',
  verify: 'ask whether a delegate may act now (verify, AuthZEN)',
  'events:read': 'read the audit log and export evidence',
} as const satisfies Record<Permission, string>;

export const ROLE_ASSIGNMENT_STATUSES = ['active', 'revoked'] as const;
export type RoleAssignmentStatus = (typeof ROLE_ASSIGNMENT_STATUSES)[number];
/**
 * Canonical subjects (docs/API.md, "Authentication"): `wallet:<id>`, `dashboard:<id>`, `oidc:<provider>:<id>`.
 * Identifiers may contain colons themselves (a wallet DID), but never whitespace.
 */
export const SUBJECT_ID_PATTERN = /^(?:wallet:\S+|dashboard:\S+|oidc:[A-Za-z0-9._-]+:\S+)$/;
export const SUBJECT_ID_MAX = 256;

// ── identity verifications ──
export const IDENTITY_VERIFICATION_PURPOSES = ['mandate', 'sign_in'] as const;
export type IdentityVerificationPurpose = (typeof IDENTITY_VERIFICATION_PURPOSES)[number];
export const IDENTITY_VERIFICATION_STATUSES = ['PENDING', 'VERIFIED', 'FAILED'] as const;
export type IdentityVerificationStatus = (typeof IDENTITY_VERIFICATION_STATUSES)[number];
/** Why a presentation is refused: one check each. */
export const PRESENTATION_FAILURE_REASONS = [
  'SESSION_EXPIRED',
  'STATE_MISMATCH',
  'ALREADY_ANSWERED',
  'UNTRUSTED_ISSUER',
  'BAD_SIGNATURE',
  'WRONG_CREDENTIAL_TYPE',
  'DISCLOSURE_MISMATCH',
  'CREDENTIAL_EXPIRED',
  'CREDENTIAL_REVOKED',
  'NONCE_MISMATCH',
  'AUDIENCE_MISMATCH',
  'KEY_BINDING_INVALID',
] as const;
/** Why a verification FAILED: one check of the presentation each, or the wallet declined. */
export const IDENTITY_VERIFICATION_REASONS = [...PRESENTATION_FAILURE_REASONS, 'WALLET_DECLINED'] as const;
export type IdentityVerificationReason = (typeof IDENTITY_VERIFICATION_REASONS)[number];
/** A session lives this long; a VERIFIED mandate-purpose one binds a mandate within BIND_WINDOW_MS of verification. */
export const IDENTITY_VERIFICATION_TTL_MS = 5 * 60_000;
export const IDENTITY_VERIFICATION_BIND_WINDOW_MS = 10 * 60_000;

// ── widget ──
export const MAX_ALLOWED_ORIGINS = 50;

/** A host name as WHATWG URL leaves it (lower case, IDN as punycode), an IPv4 address or a bracketed IPv6 one. */
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])$/;
/**
 * Spelled out literally, so the parser's forgiving forms (`https:host`, backslashes, stripped
 * tabs and newlines, leading spaces) never become a stored URL that differs from what was sent.
 */
const LITERAL_HTTPS = /^https:\/\/[^\s\\]+$/i;

function parseHttps(value: string): URL | null {
  if (!LITERAL_HTTPS.test(value) || /[\p{Cc}\p{Cf}]/u.test(value)) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' || url.username !== '' || url.password !== '') return null;
  return HOST.test(url.hostname) ? url : null;
}

/**
 * An https origin as browsers send it in the Origin header: scheme, host and optional
 * non-default port; no path (not even "/"), query, fragment, credentials or wildcard. Answers
 * the normalised origin (host lower-cased, IDN as punycode), or null when not acceptable.
 */
export function normalizeHttpsOrigin(value: string): string | null {
  if (!/^https:\/\/[^/?#@*]+$/i.test(value) || /:443$/.test(value)) return null;
  return parseHttps(value)?.origin ?? null;
}

export function isHttpsOrigin(value: string): boolean {
  return normalizeHttpsOrigin(value) !== null;
}

export const COLOR_PATTERN = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
/** A BCP 47 tag of the common shape: language, optional script, optional region (en, en-GB, zh-Hant-TW). */
export const LOCALE_PATTERN = /^[a-z]{2,3}(?:-[A-Z][a-z]{3})?(?:-(?:[A-Z]{2}|[0-9]{3}))?$/;

/**
 * An https URL without credentials, normalised by the WHATWG parser (its href: quotes, spaces
 * and other unsafe characters percent-encoded, host lower-cased); null when not acceptable.
 */
export function normalizeHttpsUrl(value: string): string | null {
  return parseHttps(value)?.href ?? null;
}

export function isHttpsUrl(value: string): boolean {
  return normalizeHttpsUrl(value) !== null;
}
