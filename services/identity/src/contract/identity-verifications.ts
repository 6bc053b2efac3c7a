import { defineRoutes, listing, listQueryShape, routeGroup } from '@mandate/shared/contract';
import { z } from 'zod';
import { timestamp, TENANT_CONFIG_READ } from './common';
import {
  IDENTITY_VERIFICATION_PURPOSES,
  IDENTITY_VERIFICATION_REASONS,
  IDENTITY_VERIFICATION_STATUSES,
} from './wire';

// Identity verifications (OpenID4VP): schemas and routes.

export const createIdentityVerificationBody = z.strictObject({
  purpose: z.enum(IDENTITY_VERIFICATION_PURPOSES),
});

export const createSignInVerificationBody = z.strictObject({
  tenant_id: z.string().min(1).max(64),
});

/**
 * The wallet's direct_post, form-encoded (OpenID4VP 1.0): a vp_token and the state, or an error
 * (the user declined). Strict, like every request body.
 */
export const walletResponseBody = z.strictObject({
  vp_token: z.string().max(32_768).optional(),
  state: z.string().max(512).optional(),
  error: z.string().max(128).optional(),
  error_description: z.string().max(1024).optional(),
});

export const createdIdentityVerificationSchema = z
  .object({
    id: z.string(),
    purpose: z.enum(IDENTITY_VERIFICATION_PURPOSES),
    status: z.literal('PENDING'),
    expires_at: timestamp,
    authorization_request: z.string(),
    request_uri: z.string(),
    /** Sign-in only: what the browser that started it polls and exchanges for a token with. */
    poll_token: z.string().optional(),
  })
  .meta({ id: 'CreatedIdentityVerification' });

export const identityVerificationSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    purpose: z.enum(IDENTITY_VERIFICATION_PURPOSES),
    status: z.enum(IDENTITY_VERIFICATION_STATUSES),
    created_at: timestamp,
    expires_at: timestamp,
    answered_at: timestamp.nullable(),
    reason: z.enum(IDENTITY_VERIFICATION_REASONS).nullable(),
    assurance: z.literal('HIGH').nullable(),
    issuer: z.string().nullable(),
    subject_id: z.string().nullable(),
    claims_digest: z.string().nullable(),
    /** Exactly the three claims asked for, once VERIFIED. */
    claims: z.object({ family_name: z.string(), given_name: z.string(), birth_date: z.string() }).nullable(),
    verified_at: timestamp.nullable(),
    /** The mandate this verification was bound to (mandate purpose), once used. */
    consumed_by: z.string().nullable(),
  })
  .meta({ id: 'IdentityVerification' });

/** The answer of every route that reads one session: the session as identityVerificationSchema describes it. */
const verificationResponse = { 200: { description: 'The verification', schema: identityVerificationSchema } };
/** The answer of every route that starts a session: it, PENDING, with the link for the wallet. */
const startedResponse = (description: string) => ({
  201: { description, schema: createdIdentityVerificationSchema },
});
/** A poll_token route's 404: it names no session, or one the poll_token is not of (the same answer, so it tells nothing). */
const POLL_TOKEN_NOT_FOUND = 'Verification not found, or the poll_token is not its';

export const listIdentityVerificationsQuery = z.strictObject({
  ...listQueryShape,
  status: z.enum(IDENTITY_VERIFICATION_STATUSES).optional(),
  purpose: z.enum(IDENTITY_VERIFICATION_PURPOSES).optional(),
});

/**
 * A session in a list (Trust operations): its state and who vouched, never the disclosed claims,
 * their digest or the subject (GET by id answers those to mandates:write or tenant:write only).
 */
export const identityVerificationSummarySchema = identityVerificationSchema
  .pick({
    id: true,
    tenant_id: true,
    purpose: true,
    status: true,
    created_at: true,
    expires_at: true,
    answered_at: true,
    reason: true,
    assurance: true,
    issuer: true,
    verified_at: true,
    consumed_by: true,
  })
  .meta({ id: 'IdentityVerificationSummary' });

export const pollBody = z.strictObject({ poll_token: z.string().min(1).max(128) });

export const signInTokenSchema = z
  .object({
    access_token: z.string(),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int(),
    /** The canonical subject the gateway maps the token to: assign it a role in the tenant. */
    subject_id: z.string(),
    tenant_id: z.string(),
  })
  .meta({ id: 'SignInToken' });

export const jwksSchema = z
  .object({ keys: z.array(z.record(z.string(), z.unknown())) })
  .meta({ id: 'WalletJwks' });

const verifications = { service: 'identity', tags: ['identity-verifications'] } as const;
/** Called by the tenant that verifies someone, each with its own scope. */
const tenantVerifications = routeGroup({ ...verifications, auth: 'tenant' });
/** Called by a wallet or a signing-in browser, without credentials. */
const walletVerifications = routeGroup({ ...verifications, auth: 'public' });
/**
 * Those that start or answer a session, limited per client IP (the onboarding bucket). They hand a
 * caller without credentials a capability (a session's link, its token), so an Idempotency-Key
 * never replays them (docs/API.md#idempotency).
 */
const walletActions = routeGroup({ ...verifications, auth: 'public', limit: 'onboarding', replay: false });

export const identityVerificationRoutes = defineRoutes({
  createIdentityVerification: tenantVerifications.post('/v1/identity-verifications', {
    summary: 'Start a wallet verification (OpenID4VP) for an identity-verified mandate',
    scope: 'mandates:write',
    request: { body: createIdentityVerificationBody },
    responses: startedResponse('A PENDING session (5 minutes) and the openid4vp:// link for the wallet'),
    secrets: ['poll_token'],
  }),
  listIdentityVerifications: tenantVerifications.get('/v1/identity-verifications', {
    summary: "List the tenant's wallet verification sessions, newest first (no claims)",
    scope: 'tenants:admin',
    permissions: TENANT_CONFIG_READ,
    ...listing(listIdentityVerificationsQuery, 'A page of sessions', identityVerificationSummarySchema),
  }),
  createSignInVerification: walletActions.post('/v1/identity-verifications/sign-in', {
    summary: 'Start a wallet sign-in to a tenant (no authentication; limited per client IP)',
    request: { body: createSignInVerificationBody },
    responses: startedResponse('A PENDING sign-in session, its link and the poll_token'),
    secrets: ['poll_token'],
    errors: { 404: 'No such tenant' },
  }),
  getIdentityVerification: tenantVerifications.get('/v1/identity-verifications/:id', {
    summary:
      'Read a mandate verification: status, reason, assurance; the disclosed claims, their digest and ' +
      'the subject only with mandates:write (API key) or tenant:write (JWT)',
    scope: 'mandates:read',
    responses: {
      200: {
        description:
          'The verification: with claims, claims_digest and subject_id for a caller holding mandates:write ' +
          'or tenant:write; without those three members (its status only) for any other',
        schema: identityVerificationSchema.or(identityVerificationSummarySchema),
      },
    },
    errors: { 404: 'Verification not found, or a sign-in one (read only with its poll_token)' },
  }),
  getIdentityVerificationRequest: walletVerifications.get('/v1/identity-verifications/:id/request', {
    summary: 'The signed request object the wallet fetches (application/oauth-authz-req+jwt)',
    responses: {
      200: { description: 'The request object, a compact JWS (not JSON)', schema: z.string() },
    },
    errors: {
      404: 'Verification not found, no longer pending, or its request object was already served (once only)',
    },
  }),
  answerIdentityVerification: walletActions.post('/v1/identity-verifications/:id/response', {
    summary: "The wallet's direct_post answer (form-encoded vp_token and state; limited per client IP)",
    request: { body: walletResponseBody },
    responses: { 200: { description: 'Verified', schema: z.object({}) } },
    errors: {
      400:
        'The presentation failed a check and the session is FAILED (the message names the reason); or the ' +
        'answer is a replay (ALREADY_ANSWERED) or lacks the session state (STATE_MISMATCH), which change nothing',
    },
  }),
  pollSignInVerification: walletActions.post('/v1/identity-verifications/:id/poll', {
    summary: 'Sign-in: read the session with its poll_token (no authentication)',
    request: { body: pollBody },
    responses: verificationResponse,
    errors: { 404: POLL_TOKEN_NOT_FOUND },
  }),
  exchangeSignInToken: walletActions.post('/v1/identity-verifications/:id/token', {
    summary: 'Sign-in: exchange a VERIFIED session and its poll_token for a 15-minute ES256 JWT (once)',
    request: { body: pollBody },
    responses: { 200: { description: 'The token of the wallet: subject', schema: signInTokenSchema } },
    secrets: ['access_token'],
    errors: {
      404: POLL_TOKEN_NOT_FOUND,
      409: 'Not VERIFIED, or its token was already issued',
    },
  }),
  getWalletJwks: walletVerifications.get('/v1/wallet/jwks', {
    summary: 'The public keys of the wallet sign-in tokens (a JWT issuer the gateway trusts)',
    responses: { 200: { description: 'A JWK set', schema: jwksSchema } },
  }),
});
