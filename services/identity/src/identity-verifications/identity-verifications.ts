import { newId, type CallerContext } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import { type Page } from '@mandate/shared/contract';
import { readPage } from '../common/store';
import { nowIso, recordedEvent, relay, type DomainEvent, type IdentityDeps } from '../common/deps';
import { TenantNotFound } from '../tenants/tenant';
import {
  checkPresentation,
  legacySubjectId,
  sameSecret,
  type DirectPostResponse,
} from './check-presentation';
import {
  IDENTITY_VERIFICATION_BIND_WINDOW_MS,
  IDENTITY_VERIFICATION_TTL_MS,
  IdentityVerificationNotFound,
  PresentationRejected,
  PrincipalNameMismatch,
  VerificationNotUsable,
  verifiedName,
  WalletNotConfigured,
  hashPollToken,
  newPollToken,
  pollTokenMatches,
  type Answer,
  type IdentityVerification,
  type IdentityVerificationPurpose,
  type WalletVerifier,
} from './identity-verification';
import { buildAuthorizationRequest, freshSecret } from './request';
import type { IdentityVerificationFilter } from './identity-verification-store';
import { signSignInToken } from './sign-in-tokens';

export interface StartedVerification {
  verification: IdentityVerification;
  authorizationRequest: string;
  requestUri: string;
  pollToken?: string;
}

function verifierOf(deps: IdentityDeps): WalletVerifier {
  if (!deps.wallet) throw new WalletNotConfigured();
  return deps.wallet;
}

const resource = (v: IdentityVerification) => ({ type: 'identity_verification', id: v.id });

/** Starts a session: a fresh nonce and state, the request object signed once, STARTED with it. */
export async function startIdentityVerification(
  deps: IdentityDeps,
  tenantId: string,
  purpose: IdentityVerificationPurpose,
  caller?: CallerContext,
): Promise<StartedVerification> {
  const wallet = verifierOf(deps);
  if (purpose === 'sign_in' && !(await deps.store.tenants.get(tenantId))) throw new TenantNotFound();
  const now = deps.clock.now();
  const id = newId('idv');
  const base = `${wallet.publicUrl}/v1/identity-verifications/${id}`;
  const nonce = freshSecret();
  const state = freshSecret();
  const { authorizationRequest, requestObject } = await buildAuthorizationRequest({
    identity: wallet.identity,
    responseUri: `${base}/response`,
    requestUri: `${base}/request`,
    nonce,
    state,
    now,
    lifetimeSeconds: IDENTITY_VERIFICATION_TTL_MS / 1000,
  });
  const pollToken = purpose === 'sign_in' ? newPollToken() : undefined;
  const verification: IdentityVerification = {
    id,
    tenant_id: tenantId,
    purpose,
    status: 'PENDING',
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + IDENTITY_VERIFICATION_TTL_MS).toISOString(),
    nonce,
    state,
    client_id: wallet.identity.clientId,
    request_object: requestObject,
    request_served_at: null,
    poll_token_hash: pollToken ? hashPollToken(pollToken) : null,
    answered_at: null,
    reason: null,
    result: null,
    consumed_by: null,
    consumed_at: null,
  };
  const events = [
    recordedEvent(
      deps,
      {
        type: 'IDENTITY_VERIFICATION_STARTED',
        tenantId,
        resource: resource(verification),
        data: { verification_id: id, purpose, expires_at: verification.expires_at },
      },
      caller,
    ),
  ];
  await deps.store.identityVerifications.insert(verification, events);
  await relay(deps, events);
  return { verification, authorizationRequest, requestUri: `${base}/request`, pollToken };
}

/**
 * The request object the wallet fetches: once, while the session waits for an answer and has not
 * expired. One guarded write marks it served, so of two fetches (concurrent ones included) exactly one
 * gets it: whoever sees the link after the wallet fetched it learns nothing, least of all the state.
 */
export async function requestObjectOf(deps: IdentityDeps, id: string): Promise<string> {
  const served = await deps.store.identityVerifications.serveRequestObject(
    id,
    deps.clock.now().toISOString(),
  );
  if (!served) throw new IdentityVerificationNotFound();
  return served.request_object;
}

export async function getIdentityVerification(
  deps: IdentityDeps,
  tenantId: string,
  id: string,
): Promise<IdentityVerification> {
  const v = await deps.store.identityVerifications.get(tenantId, id);
  if (!v) throw new IdentityVerificationNotFound();
  return v;
}

/**
 * Who may read a person's name and birth date from a session: a credential that may create
 * identity-verified mandates (an API key's mandates:write scope) or administer the tenant (a JWT
 * subject's tenant:write). Any other caller of the tenant sees the session's status only.
 */
export const CLAIMS_READ_PERMISSIONS = ['mandates:write', 'tenant:write'] as const;

export function mayReadClaims(permissions: readonly string[]): boolean {
  return CLAIMS_READ_PERMISSIONS.some((p) => permissions.includes(p));
}

/**
 * A tenant credential's read of one session: a mandate-purpose one only. A sign-in session belongs
 * to the browser holding its poll_token, so by id it is absent (404) to every tenant credential.
 */
export async function readIdentityVerification(
  deps: IdentityDeps,
  tenantId: string,
  id: string,
  permissions: readonly string[],
): Promise<{ verification: IdentityVerification; withClaims: boolean }> {
  const verification = await getIdentityVerification(deps, tenantId, id);
  if (verification.purpose === 'sign_in') throw new IdentityVerificationNotFound();
  return { verification, withClaims: mayReadClaims(permissions) };
}

/** The tenant's sessions, newest first (Trust operations); works with or without a configured verifier. */
export async function listIdentityVerifications(
  deps: IdentityDeps,
  tenantId: string,
  options: { limit: number; after?: string } & IdentityVerificationFilter,
): Promise<Page<IdentityVerification>> {
  const { status, purpose } = options;
  return readPage(
    options,
    (window) => deps.store.identityVerifications.list(tenantId, { ...window, status, purpose }),
    (v) => v.id,
  );
}

/** Sign-in: the session read by whoever holds its poll token (the browser that started it). */
export async function pollIdentityVerification(
  deps: IdentityDeps,
  id: string,
  pollToken: string,
): Promise<IdentityVerification> {
  const v = await deps.store.identityVerifications.getById(id);
  if (!v || !pollTokenMatches(pollToken, v.poll_token_hash)) throw new IdentityVerificationNotFound();
  return v;
}

/** What the wallet answered, checked: VERIFIED with its result, or FAILED with the reason (and a claim-free detail). */
async function walletAnswer(
  wallet: WalletVerifier,
  session: IdentityVerification,
  response: DirectPostResponse & { error?: string },
  now: Date,
): Promise<{ answer: Answer; detail?: string }> {
  const answered_at = now.toISOString();
  // The user declined in the wallet (access_denied, …): nothing to check.
  if (response.error !== undefined && response.vp_token === undefined)
    return { answer: { status: 'FAILED', reason: 'WALLET_DECLINED', answered_at } };
  const result = await checkPresentation(
    {
      nonce: session.nonce,
      state: session.state,
      clientId: session.client_id,
      expiresAt: new Date(session.expires_at),
      status: session.status,
      answered: false,
    },
    response,
    {
      trustedIssuers: wallet.trustedIssuers,
      subjectSecret: wallet.subjectSecret,
      tenantId: session.tenant_id,
      fetchStatusList: wallet.fetchStatusList,
      now,
    },
  );
  if (result.status !== 'VERIFIED')
    return { answer: { status: 'FAILED', reason: result.reason, answered_at }, detail: result.detail };
  const { status: _status, ...verified } = result;
  return { answer: { status: 'VERIFIED', result: verified, answered_at } };
}

/** The answer's event: the claims digest or the reason, never a claim. */
function answerEvent(session: IdentityVerification, answer: Answer): DomainEvent {
  if (answer.status === 'VERIFIED')
    return {
      type: 'IDENTITY_VERIFIED',
      tenantId: session.tenant_id,
      resource: resource(session),
      data: {
        verification_id: session.id,
        purpose: session.purpose,
        assurance: answer.result.assurance,
        issuer: answer.result.issuer,
        subject_id: answer.result.subject_id,
        claims_digest: answer.result.claims_digest,
      },
    };
  return {
    type: 'IDENTITY_VERIFICATION_FAILED',
    tenantId: session.tenant_id,
    resource: resource(session),
    data: { verification_id: session.id, purpose: session.purpose, reason: answer.reason },
  };
}

/**
 * The wallet's direct_post: checks the presentation, then ONE guarded write from PENDING stores the
 * outcome and its event. A second answer (a replay, or a concurrent one that lost the write) is
 * ALREADY_ANSWERED and changes nothing, as does an answer without the session's state. Events carry the reason or the claims digest, never a claim.
 */
export async function answerIdentityVerification(
  deps: IdentityDeps,
  id: string,
  response: DirectPostResponse & { error?: string },
  caller?: CallerContext,
): Promise<IdentityVerification> {
  const wallet = verifierOf(deps);
  const session = await deps.store.identityVerifications.getById(id);
  if (!session) throw new IdentityVerificationNotFound();
  const now = deps.clock.now();
  if (session.status !== 'PENDING' || session.answered_at !== null) {
    throw new PresentationRejected('ALREADY_ANSWERED');
  }
  // The state is the secret that ties an answer to this session's wallet (it is only in the signed
  // request object). Without it the answer is someone else's: refused, and the session stays PENDING,
  // so knowing a session id is not enough to fail it. An error answer (the user declined) needs it too.
  if (typeof response.state !== 'string' || !sameSecret(response.state, session.state)) {
    throw new PresentationRejected('STATE_MISMATCH');
  }
  const { answer, detail } = await walletAnswer(wallet, session, response, now);
  const events: AuditEvent[] = [recordedEvent(deps, answerEvent(session, answer), caller)];
  const written = await deps.store.identityVerifications.answer(session.id, answer, events);
  if (!written) throw new PresentationRejected('ALREADY_ANSWERED');
  await relay(deps, events);
  if (answer.status === 'FAILED') {
    // detail never holds a claim value (check-presentation's rule).
    deps.logger?.info({ verificationId: session.id, reason: answer.reason, detail }, 'wallet answer failed');
    throw new PresentationRejected(answer.reason);
  }
  return written;
}

/**
 * Binds a VERIFIED mandate-purpose session to one mandate: one guarded write, so a session is used
 * by exactly one mandate. 404 for another tenant's or an absent one; 409 for one that cannot bind.
 * The principal's name is the verified one: a mandate that names its principal otherwise
 * (`principalName`) is refused (400) before anything is written, so the verification stays usable.
 * Checked on a read before the guarded write: a VERIFIED session's claims never change.
 */
export async function consumeForMandate(
  deps: IdentityDeps,
  tenantId: string,
  id: string,
  mandateId: string,
  principalName?: string,
): Promise<IdentityVerification> {
  if (principalName !== undefined) {
    const v = await getIdentityVerification(deps, tenantId, id);
    if (
      v.purpose === 'mandate' &&
      v.result !== null &&
      principalName.normalize('NFC') !== verifiedName(v.result)
    )
      throw new PrincipalNameMismatch();
  }
  const now = deps.clock.now();
  const consumed = await deps.store.identityVerifications.consume(tenantId, id, {
    by: mandateId,
    at: now.toISOString(),
    purpose: 'mandate',
    verifiedAtOrAfter: new Date(now.getTime() - IDENTITY_VERIFICATION_BIND_WINDOW_MS).toISOString(),
  });
  if (consumed) return consumed;
  const v = await getIdentityVerification(deps, tenantId, id);
  if (v.purpose !== 'mandate') throw new VerificationNotUsable('Identity verification is not for a mandate');
  if (v.status !== 'VERIFIED') throw new VerificationNotUsable(`Identity verification is ${v.status}`);
  if (v.consumed_by !== null) throw new VerificationNotUsable('Identity verification was already used');
  throw new VerificationNotUsable('Identity verification is too old to bind a mandate (10 minutes)');
}

/** Sign-in: the VERIFIED session, marked used once, for the token the caller then signs. */
export async function consumeForSignIn(
  deps: IdentityDeps,
  id: string,
  pollToken: string,
): Promise<IdentityVerification> {
  const v = await pollIdentityVerification(deps, id, pollToken);
  const now = deps.clock.now();
  const consumed = await deps.store.identityVerifications.consume(v.tenant_id, id, {
    by: 'token',
    at: nowIso(deps),
    purpose: 'sign_in',
    verifiedAtOrAfter: new Date(now.getTime() - IDENTITY_VERIFICATION_BIND_WINDOW_MS).toISOString(),
  });
  if (!consumed)
    throw new VerificationNotUsable(
      v.status === 'VERIFIED'
        ? 'Identity verification was already used'
        : `Identity verification is ${v.status}`,
    );
  return consumed;
}

/** Sign-in: a VERIFIED sign-in session's token, issued once; its sub is the wallet: subject. */
export async function exchangeSignInToken(
  deps: IdentityDeps,
  id: string,
  pollToken: string,
): Promise<{ token: string; subjectId: string; tenantId: string }> {
  const wallet = verifierOf(deps);
  if (!wallet.signIn) throw new WalletNotConfigured();
  const v = await consumeForSignIn(deps, id, pollToken);
  const subjectId = await signInSubject(deps, wallet.subjectSecret, v);
  const token = await signSignInToken(wallet.signIn, subjectId, v.tenant_id, deps.clock.now());
  return { token, subjectId, tenantId: v.tenant_id };
}

/**
 * The pairwise subject id (docs/API.md#identity-verification-with-a-wallet), unless the person holds
 * no role under it and an active one under the shared id of before v4: then that one, so a role
 * assigned before keeps signing its holder in (docs/DECISIONS.md#pairwise-wallet-subjects).
 */
async function signInSubject(deps: IdentityDeps, secret: string, v: IdentityVerification): Promise<string> {
  const result = v.result!;
  const roles = deps.store.roleAssignments;
  if (await roles.findActive(v.tenant_id, result.subject_id)) return result.subject_id;
  const legacy = legacySubjectId(result.issuer, result.claims, secret);
  return (await roles.findActive(v.tenant_id, legacy)) ? legacy : result.subject_id;
}

/** The sign-in issuer's keys; none when wallet verification is off (an empty set, not an error). */
export function walletJwks(deps: IdentityDeps): { keys: Record<string, unknown>[] } {
  const signIn = deps.wallet?.signIn;
  return { keys: signIn ? [{ ...signIn.publicJwk }] : [] };
}
