import type { Plan } from '@mandate/identity';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { AppError, badRequest, notFound, unauthorized, type Actor } from '@mandate/shared/core';
import type { RouteRule } from '../routes/table';
import type { KeyResolver } from './key-resolver';
import { RecentCredentials } from './recent-credentials';

export const MALFORMED_BEARER = 'Malformed Bearer value (expected Bearer tenantId:apiKey)';
const INVALID_KEY = 'Invalid or missing API key';
export const KEY_WITHOUT_TENANT =
  'Bearer value looks like an API key without its tenant id: send Authorization: Bearer <tenantId>:<apiKey> or X-Api-Key: <apiKey>';
export const OPERATOR_TOKEN_ELSEWHERE = 'The operator token is accepted only on /v1/platform/* routes';
/** Keys are `msk_` + base62 (identity's format); a Bearer value like that lacks only its tenant. */
const API_KEY_SHAPE = /^msk_[0-9A-Za-z]+$/;

/** Who the gateway established the caller to be, before it forwards anything. */
export interface Principal {
  tenantId: string | null;
  actor: Actor;
  permissions: string[];
  plan?: Plan;
}

type Credential =
  | { kind: 'none' }
  | { kind: 'api_key'; tenantId?: string; secret: string }
  | { kind: 'jwt'; token: string }
  | { kind: 'opaque'; token: string };

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
export const TENANT_ID = /^tnt_[0-9a-z]{26}$/;
/**
 * What an API-key secret can look like at most: visible ASCII, 200 characters (identity's bound;
 * real keys are 47). Anything else cannot be a key, so it is a 401 without asking identity.
 */
const SECRET_SHAPE = /^[\x21-\x7e]{1,200}$/;
const BAD_TENANT_HEADER = 'X-Tenant-Id must be a tenant id (tnt_ followed by 26 lowercase letters or digits)';

/** One request header as a string, as express gave it: node joins repeats of most headers with ", ". */
export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Reads the credential from Authorization or X-Api-Key (docs/API.md, "Authentication"), without deciding whether it is valid. */
export function readCredential(req: IncomingMessage): Credential {
  const authorization = header(req, 'authorization');
  if (authorization !== undefined) {
    const m = /^Bearer\s+(.+)$/i.exec(authorization.trim());
    if (!m) throw unauthorized(MALFORMED_BEARER);
    const value = m[1]!.trim();
    if (JWT_SHAPE.test(value)) return { kind: 'jwt', token: value };
    const colon = value.indexOf(':');
    if (colon > 0) {
      const tenantId = value.slice(0, colon);
      const secret = value.slice(colon + 1);
      if (!TENANT_ID.test(tenantId) || secret.length === 0) throw unauthorized(MALFORMED_BEARER);
      if (!SECRET_SHAPE.test(secret)) throw unauthorized(INVALID_KEY);
      return { kind: 'api_key', tenantId, secret };
    }
    return { kind: 'opaque', token: value };
  }
  const apiKeyHeader = header(req, 'x-api-key');
  if (apiKeyHeader !== undefined) {
    const value = apiKeyHeader.trim();
    const colon = value.indexOf(':');
    if (colon > 0) {
      const tenantId = value.slice(0, colon);
      const secret = value.slice(colon + 1);
      if (!TENANT_ID.test(tenantId) || !SECRET_SHAPE.test(secret)) throw unauthorized(INVALID_KEY);
      return { kind: 'api_key', tenantId, secret };
    }
    if (!SECRET_SHAPE.test(value)) throw unauthorized(INVALID_KEY);
    return { kind: 'api_key', secret: value };
  }
  return { kind: 'none' };
}

/**
 * What the gateway knows a request's credential by, whatever header form carried it (Bearer in any
 * case, X-Api-Key with or without the tenant): an API key by its secret, a JWT by its token, as a
 * SHA-256 (never the value). Undefined for none, the operator token and anything malformed: those
 * never pass a blocked address (docs/DECISIONS.md, "Authentication").
 */
export function credentialIdentity(req: IncomingMessage): string | undefined {
  let credential: Credential;
  try {
    credential = readCredential(req);
  } catch {
    return undefined;
  }
  if (credential.kind === 'api_key') return RecentCredentials.digest(`api_key ${credential.secret}`);
  if (credential.kind === 'jwt') return RecentCredentials.digest(`jwt ${credential.token}`);
  return undefined;
}

/** The kind of credential a request carried, for the failed-authentication log: never any part of it. */
/** The credential a request carries, or undefined when it carries none or a malformed one. */
export function presentedCredential(req: IncomingMessage): Credential | undefined {
  try {
    return readCredential(req);
  } catch {
    return undefined;
  }
}

export function credentialKind(
  req: IncomingMessage,
): 'none' | 'api_key' | 'jwt' | 'opaque_bearer' | 'malformed' {
  try {
    const { kind } = readCredential(req);
    return kind === 'opaque' ? 'opaque_bearer' : kind;
  } catch {
    return 'malformed';
  }
}

export function sameSecret(a: string, b: string): boolean {
  // Hash first so lengths match and timingSafeEqual leaks nothing about the operator token.
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

export interface JwtAuthenticator {
  authenticate(token: string, tenantId: string | null): Promise<Principal>;
  /**
   * Whether the token is a trusted issuer's and valid now (signature, issuer, audience, expiry),
   * without looking its subject up: what lets a JWT pass a blocked address (docs/DECISIONS.md,
   * "Authentication"), since no one guesses a signature.
   */
  verifies?(token: string): Promise<boolean>;
}

export interface AuthDeps {
  keys: KeyResolver;
  operatorToken: string;
  jwt?: JwtAuthenticator;
}

/**
 * Establishes the caller for a matched route and checks its scope or permission.
 * Throws 401 for missing or bad credentials, 403 for a missing scope, 404 for another tenant's path.
 */
export async function authenticate(
  req: IncomingMessage,
  rule: RouteRule,
  params: Record<string, string>,
  deps: AuthDeps,
): Promise<Principal | null> {
  const principal = await identify(req, rule, params, deps);
  if (principal) checkAccess(principal, rule, params);
  return principal;
}

/**
 * Who the caller is, without deciding whether it may call the route: throws 401 for missing or
 * bad credentials (and 400/404 for a JWT caller's malformed tenant). The pipeline sets the
 * principal before checkAccess, so a call refused for its scope is audited with its key id
 * (docs/API.md#audit-of-every-call).
 */
export async function identify(
  req: IncomingMessage,
  rule: RouteRule,
  params: Record<string, string>,
  deps: AuthDeps,
): Promise<Principal | null> {
  if (rule.auth === 'public') return null;
  const credential = readCredential(req);

  if (rule.auth === 'operator') {
    if (credential.kind === 'opaque' && sameSecret(credential.token, deps.operatorToken)) {
      return { tenantId: null, actor: { type: 'operator' }, permissions: ['platform:*'] };
    }
    if (credential.kind === 'none') throw unauthorized('Operator credentials required');
    // A valid tenant credential is still no operator: the platform surface is operator-only.
    throw unauthorized('Invalid operator credentials');
  }

  let principal: Principal;
  switch (credential.kind) {
    case 'none':
      throw unauthorized(INVALID_KEY);
    case 'opaque':
      // Say what was recognised and what to send instead; anything else keeps the text of docs/API.md, "Errors".
      if (sameSecret(credential.token, deps.operatorToken)) throw unauthorized(OPERATOR_TOKEN_ELSEWHERE);
      if (API_KEY_SHAPE.test(credential.token)) throw unauthorized(KEY_WITHOUT_TENANT);
      throw unauthorized(MALFORMED_BEARER);
    case 'jwt': {
      if (!deps.jwt) throw unauthorized('Invalid bearer token');
      const tenantId = params.tenantId ?? header(req, 'x-tenant-id') ?? null;
      // A malformed tenant in the path names no tenant (404); in the header it is bad input (400).
      if (tenantId !== null && !TENANT_ID.test(tenantId)) {
        if (params.tenantId !== undefined) throw notFound('Tenant not found');
        throw badRequest(BAD_TENANT_HEADER);
      }
      principal = await deps.jwt.authenticate(credential.token, tenantId);
      break;
    }
    case 'api_key': {
      const key = await deps.keys.resolve(credential.secret);
      if (!key || (credential.tenantId !== undefined && credential.tenantId !== key.tenant_id)) {
        throw unauthorized(INVALID_KEY);
      }
      principal = {
        tenantId: key.tenant_id,
        actor: { type: 'api_key', key_id: key.key_id },
        permissions: key.scopes,
        plan: key.plan,
      };
      break;
    }
  }

  return principal;
}

/** An identified caller's right to the route: 403 for a missing scope, 404 for another tenant's path. */
export function checkAccess(principal: Principal, rule: RouteRule, params: Record<string, string>): void {
  if (principal.actor.type === 'operator') return;
  authorize(principal, rule);
  // A path naming another tenant is answered as if it did not exist.
  if (params.tenantId !== undefined && params.tenantId !== principal.tenantId)
    throw notFound('Tenant not found');
}

export function authorize(principal: Principal, rule: RouteRule): void {
  if (!rule.scope) return;
  if (principal.actor.type === 'api_key') {
    const scopes = rule.scopes ?? [rule.scope];
    if (!scopes.some((s) => principal.permissions.includes(s)))
      throw new AppError('FORBIDDEN', `API key lacks required scope: ${scopes.join(' or ')}`);
    return;
  }
  const accepted = rule.permissions ?? [rule.scope];
  if (!accepted.some((p) => principal.permissions.includes(p))) {
    throw new AppError('FORBIDDEN', `Missing required permission: ${accepted.join(' or ')}`);
  }
}

export function isAuthError(err: unknown): err is AppError {
  return err instanceof AppError && (err.status === 401 || err.status === 403);
}
