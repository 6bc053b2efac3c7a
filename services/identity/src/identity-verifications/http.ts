import { callerOf, implement, implementRaw, mountContracts, tenantOf } from '@mandate/shared/http';
import express, { Router } from 'express';
import type { Deps } from '../deps';
import { internalRoutes, routes } from '../contract';
import { pageView, pageWindow } from '../http/pages';
import { verifiedName, type IdentityVerification } from './identity-verification';
import {
  answerIdentityVerification,
  consumeForMandate,
  exchangeSignInToken,
  listIdentityVerifications,
  pollIdentityVerification,
  readIdentityVerification,
  requestObjectOf,
  startIdentityVerification,
  walletJwks,
  type StartedVerification,
} from './identity-verifications';
import { REQUEST_OBJECT_CONTENT_TYPE } from './request';
import { SIGN_IN_TOKEN_TTL_SECONDS } from './sign-in-tokens';

/** A session in a list: its state, never the claims, their digest or the subject. */
export const identityVerificationSummaryView = (v: IdentityVerification) => ({
  id: v.id,
  tenant_id: v.tenant_id,
  purpose: v.purpose,
  status: v.status,
  created_at: v.created_at,
  expires_at: v.expires_at,
  answered_at: v.answered_at,
  reason: v.reason,
  assurance: v.result?.assurance ?? null,
  issuer: v.result?.issuer ?? null,
  verified_at: v.result?.verified_at ?? null,
  consumed_by: v.consumed_by,
});

/** The one place a session becomes a response body: never the nonce, state or poll token hash. */
export const identityVerificationView = (v: IdentityVerification) => ({
  ...identityVerificationSummaryView(v),
  subject_id: v.result?.subject_id ?? null,
  claims_digest: v.result?.claims_digest ?? null,
  claims: v.result ? { ...v.result.claims } : null,
});

const startedView = (s: StartedVerification) => ({
  id: s.verification.id,
  purpose: s.verification.purpose,
  status: 'PENDING' as const,
  expires_at: s.verification.expires_at,
  authorization_request: s.authorizationRequest,
  request_uri: s.requestUri,
  ...(s.pollToken ? { poll_token: s.pollToken } : {}),
});

/**
 * The wallet's direct_post is form-encoded (OpenID4VP response_mode direct_post), so it is mounted
 * before the app's JSON-only body parser, with its own.
 */
export function walletResponseRoutes(deps: Deps): Router {
  const r = Router();
  r.use(
    routes.answerIdentityVerification.path,
    express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 10 }),
  );
  mountContracts(r, [
    implement(routes.answerIdentityVerification)(async ({ params, body }, req) => {
      await answerIdentityVerification(deps, params.id, body, callerOf(req));
      return { status: 200, body: {} };
    }),
  ]);
  return r;
}

export function identityVerificationRoutes(deps: Deps): Router {
  const r = Router();
  mountContracts(r, [
    implement(routes.createIdentityVerification)(async ({ body }, req) => ({
      status: 201,
      body: startedView(await startIdentityVerification(deps, tenantOf(req), body.purpose, callerOf(req))),
    })),
    // Public: the gateway forwards it without a tenant, limited per client IP; the tenant is named in the body.
    implement(routes.createSignInVerification)(async ({ body }, req) => ({
      status: 201,
      body: startedView(await startIdentityVerification(deps, body.tenant_id, 'sign_in', callerOf(req))),
    })),
    implementRaw(routes.getIdentityVerificationRequest)(async ({ params }, _req, res) => {
      const jwt = await requestObjectOf(deps, params.id);
      res.status(200).type(REQUEST_OBJECT_CONTENT_TYPE).setHeader('Cache-Control', 'no-store');
      res.send(jwt);
    }),
    implement(routes.listIdentityVerifications)(async ({ query }, req) => {
      const page = await listIdentityVerifications(deps, tenantOf(req), {
        ...pageWindow(query),
        status: query.status,
        purpose: query.purpose,
      });
      return { status: 200, body: pageView(page, identityVerificationSummaryView) };
    }),
    implement(routes.getIdentityVerification)(async ({ params }, req) => {
      const { verification, withClaims } = await readIdentityVerification(
        deps,
        tenantOf(req),
        params.id,
        callerOf(req).permissions,
      );
      return {
        status: 200,
        body: withClaims
          ? identityVerificationView(verification)
          : identityVerificationSummaryView(verification),
      };
    }),
    implement(routes.pollSignInVerification)(async ({ params, body }) => ({
      status: 200,
      body: identityVerificationView(await pollIdentityVerification(deps, params.id, body.poll_token)),
    })),
    implement(routes.exchangeSignInToken)(async ({ params, body }) => {
      const { token, subjectId, tenantId } = await exchangeSignInToken(deps, params.id, body.poll_token);
      return {
        status: 200,
        body: {
          access_token: token,
          token_type: 'Bearer',
          expires_in: SIGN_IN_TOKEN_TTL_SECONDS,
          subject_id: subjectId,
          tenant_id: tenantId,
        },
        headers: { 'Cache-Control': 'no-store' },
      };
    }),
    implement(routes.getWalletJwks)(async () => ({ status: 200, body: walletJwks(deps) })),
  ]);
  return r;
}

/** For mandates: binds a VERIFIED mandate-purpose session of the caller's tenant to one mandate. */
export function identityVerificationInternalRoutes(deps: Deps): Router {
  const r = Router();
  mountContracts(r, [
    implement(internalRoutes.consumeIdentityVerification)(async ({ params, body }, req) => {
      const v = await consumeForMandate(deps, tenantOf(req), params.id, body.mandate_id, body.principal_name);
      const result = v.result!;
      return {
        status: 200,
        body: {
          // The mandate's principal takes this name, never the request's (the caller holds mandates:write).
          principal_name: verifiedName(result),
          verification_id: v.id,
          assurance: result.assurance,
          issuer: result.issuer,
          subject_id: result.subject_id,
          claims_digest: result.claims_digest,
          verified_at: result.verified_at,
        },
      };
    }),
  ]);
  return r;
}
