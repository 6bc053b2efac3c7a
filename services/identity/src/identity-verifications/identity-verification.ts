import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '@mandate/shared/core';
import type {
  IdentityVerificationPurpose,
  IdentityVerificationReason,
  IdentityVerificationStatus,
} from '../contract/wire';
import type { PidClaims } from './pid-query';
import type { TrustedIssuerEntry } from './trusted-issuers';
import type { VerifierIdentity } from './request';
import type { SignInIssuer } from './sign-in-tokens';

export {
  IDENTITY_VERIFICATION_BIND_WINDOW_MS,
  IDENTITY_VERIFICATION_TTL_MS,
  type IdentityVerificationPurpose,
  type IdentityVerificationReason,
  type IdentityVerificationStatus,
} from '../contract/wire';

/** What a VERIFIED session learnt; the claims stay in the session, never in an event or a log line. */
export interface VerificationResult {
  assurance: 'HIGH';
  issuer: string;
  subject_id: string;
  claims_digest: string;
  claims: PidClaims;
  verified_at: string;
}

/** A stored verification session. nonce, state and the poll token hash never leave the service. */
export interface IdentityVerification {
  id: string;
  tenant_id: string;
  purpose: IdentityVerificationPurpose;
  status: IdentityVerificationStatus;
  created_at: string;
  expires_at: string;
  nonce: string;
  state: string;
  client_id: string;
  /**
   * The signed request object, signed once at creation so whichever instance serves it serves the same
   * bytes. Served once only (request_served_at): the link is a capability, and a second fetch is not
   * the wallet of the person verifying.
   */
  request_object: string;
  /** When the wallet fetched the request object; null until then. */
  request_served_at: string | null;
  /** SHA-256 (hex) of the sign-in poll token; null for the mandate purpose. */
  poll_token_hash: string | null;
  answered_at: string | null;
  reason: IdentityVerificationReason | null;
  result: VerificationResult | null;
  /** The mandate that consumed it (mandate purpose) or "token" once a sign-in token was issued. */
  consumed_by: string | null;
  consumed_at: string | null;
}

/** The outcome the guarded answer write stores. */
export type Answer =
  | { status: 'VERIFIED'; result: VerificationResult; answered_at: string }
  | { status: 'FAILED'; reason: IdentityVerificationReason; answered_at: string };

/** What the verifier side needs to run: configured by the service (see config.ts). */
export interface WalletVerifier {
  identity: VerifierIdentity;
  /** The public base URL the wallet reaches the /v1 routes at (the gateway's), no trailing slash. */
  publicUrl: string;
  trustedIssuers: readonly TrustedIssuerEntry[];
  subjectSecret: string;
  fetchStatusList?: (uri: string) => Promise<string>;
  /** Signs the wallet sign-in tokens; absent → the token exchange answers 503. */
  signIn?: SignInIssuer;
}

export const POLL_TOKEN_PREFIX = 'idp_';
export const newPollToken = (): string => POLL_TOKEN_PREFIX + randomBytes(32).toString('base64url');
export const hashPollToken = (token: string): string =>
  createHash('sha256').update(token, 'utf8').digest('hex');
export function pollTokenMatches(token: string, hash: string | null): boolean {
  if (hash === null) return false;
  const a = Buffer.from(hashPollToken(token), 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export class IdentityVerificationNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Identity verification not found');
  }
}

/** The wallet's answer failed a check: 400 with the reason (the session is FAILED, or was answered before). */
export class PresentationRejected extends AppError {
  constructor(readonly reason: IdentityVerificationReason) {
    super('BAD_REQUEST', `Presentation rejected: ${reason}`);
  }
}

/** A verification that cannot bind a mandate (not VERIFIED, wrong purpose, too old, already used). */
export class VerificationNotUsable extends AppError {
  constructor(message: string) {
    super('CONFLICT', message);
  }
}

/** The name a VERIFIED session vouches for: the PID's given name(s), then its family name. */
export function verifiedName(result: VerificationResult): string {
  return `${result.claims.given_name} ${result.claims.family_name}`.normalize('NFC');
}

/**
 * A mandate named its identity-verified principal otherwise than the verification does. The message
 * never says which name the verification carries: the caller may not hold the right to read claims.
 */
export class PrincipalNameMismatch extends AppError {
  constructor() {
    super('BAD_REQUEST', 'principal.name does not match the verified identity');
  }
}

export class WalletNotConfigured extends AppError {
  constructor() {
    super('SERVICE_UNAVAILABLE', 'Wallet verification is not configured on this service');
  }
}
