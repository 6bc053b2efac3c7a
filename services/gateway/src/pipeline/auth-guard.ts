import type { IncomingMessage } from 'node:http';
import { AppError } from '@mandate/shared/core';
import { credentialKind, header } from '../auth/authenticate';
import { BlockedLookups } from '../auth/blocked-lookups';
import { RecentCredentials } from '../auth/recent-credentials';
import type { GatewayDeps } from '../deps';
import { clientIp } from '../limits';

export const TOO_MANY_AUTH_FAILURES = 'Too many failed authentications from this address; retry later';
export const tooManyAuthFailures = (seconds: number) =>
  new AppError('TOO_MANY_REQUESTS', TOO_MANY_AUTH_FAILURES, { 'Retry-After': String(seconds) });

/** The credential a request carries, as sent (Authorization wins, as readCredential reads it); undefined: none. */
export function presentedCredential(req: IncomingMessage): string | undefined {
  const authorization = header(req, 'authorization');
  if (authorization !== undefined) return `authorization ${authorization}`;
  const apiKey = header(req, 'x-api-key');
  return apiKey === undefined ? undefined : `x-api-key ${apiKey}`;
}

/** What the steps that authenticate share: the client's address, failure counting, recent credentials. */
export interface AuthGuard {
  clientIpOf(req: IncomingMessage): string;
  /**
   * Logs a failed authentication (docs/API.md, "Hardening": client IP, request id, the kind of credential and the
   * reason, never the credential) and counts it against the client IP; over the limit the answer
   * is 429 instead of the 401.
   */
  authFailed(
    req: IncomingMessage,
    route: string,
    requestId: string,
    ip: string,
    err: AppError,
  ): Promise<AppError>;
  /** Credentials that authenticated in the last 10 minutes (they pass a blocked address). */
  recent: RecentCredentials;
  /** The lookups of unknown credentials a blocked address still gets. */
  lookups: BlockedLookups;
}

export function authGuard(deps: GatewayDeps): AuthGuard {
  return {
    clientIpOf: (req) =>
      clientIp(req.socket.remoteAddress, header(req, 'x-forwarded-for'), deps.trustProxy ?? false),
    async authFailed(req, route, requestId, ip, err) {
      deps.logger.warn(
        {
          ip,
          requestId,
          method: req.method,
          route,
          credential: credentialKind(req),
          reason: err.message,
        },
        'authentication failed',
      );
      const wait = (await deps.limiter?.authFailed?.(ip)) ?? 0;
      return wait > 0 ? tooManyAuthFailures(wait) : err;
    },
    recent: new RecentCredentials(),
    lookups: new BlockedLookups(),
  };
}
