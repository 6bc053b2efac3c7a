import { createRemoteJWKSet, decodeJwt, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { z } from 'zod';
import { badRequest, configError, notFound, serviceUnavailable, unauthorized } from '@mandate/shared/core';
import { TENANT_ID, type JwtAuthenticator, type Principal } from './authenticate';
import type { SubjectResolver } from './subject-resolver';
import { isLoopbackName } from '../http/loopback';

/** docs/API.md, "Authentication": one configured issuer of JWT callers. */
export const jwtIssuerSchema = z.strictObject({
  /** Names the provider in `oidc:<name>:<sub>` subjects. */
  name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, { message: 'must be 1-64 of A-Z a-z 0-9 . _ -' }),
  issuer: z.string().min(1),
  jwks_uri: z.url({ protocol: /^https?$/ }),
  audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  /** dashboard → dashboard:<sub>; oidc → oidc:<name>:<sub>; wallet → wallet:<sub>. */
  subject_scheme: z.enum(['dashboard', 'oidc', 'wallet']),
});
export type JwtIssuer = z.infer<typeof jwtIssuerSchema>;

/** The subject prefix an issuer's callers get: two issuers with one prefix could impersonate each other's subjects. */
const subjectPrefix = (i: JwtIssuer) => (i.subject_scheme === 'oidc' ? `oidc:${i.name}` : i.subject_scheme);

const issuersSchema = z.array(jwtIssuerSchema).superRefine((list, ctx) => {
  const seen = { name: new Set<string>(), issuer: new Set<string>(), prefix: new Set<string>() };
  list.forEach((i, index) => {
    const url = new URL(i.jwks_uri);
    // A JWKS over plain http is readable and forgeable on the way, so only a loopback host may use it.
    if (url.protocol !== 'https:' && !isLoopbackName(url.hostname))
      ctx.addIssue({
        code: 'custom',
        path: [index, 'jwks_uri'],
        message: 'must be https (http only on a loopback host)',
      });
    const clash = (set: Set<string>, value: string, field: string, message: string) => {
      if (set.has(value)) ctx.addIssue({ code: 'custom', path: [index, field], message });
      set.add(value);
    };
    clash(seen.name, i.name, 'name', 'names must be unique');
    clash(seen.issuer, i.issuer, 'issuer', 'issuers must be unique');
    clash(
      seen.prefix,
      subjectPrefix(i),
      'subject_scheme',
      `only one issuer may use subject scheme ${subjectPrefix(i)}`,
    );
  });
});

/** Parses JWT_ISSUERS (a JSON list); throws an error naming the variable and the bad field. */
export function parseJwtIssuers(raw: string | undefined): JwtIssuer[] {
  if (raw === undefined || raw.trim() === '') return [];
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw configError(
      'JWT_ISSUERS',
      'must be a JSON list of {name, issuer, jwks_uri, audience, subject_scheme}',
    );
  }
  const parsed = issuersSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw configError(
      `JWT_ISSUERS${issue.path.map((p) => `[${JSON.stringify(p)}]`).join('')}`,
      issue.message,
    );
  }
  return parsed.data;
}

/** Asymmetric algorithms only: an HMAC "signed" with a public key, or alg none, is never accepted. */
export const ACCEPTED_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];
export const CLOCK_TOLERANCE_SECONDS = 60;

export interface JwksOptions {
  /** How long a fetched JWKS is used before it is fetched again (jose's cacheMaxAge). */
  cacheMaxAgeMs?: number;
  /** Minimum time between two fetches triggered by an unknown kid (protects the provider from garbage tokens). */
  cooldownMs?: number;
  timeoutMs?: number;
}

const INVALID = 'Invalid bearer token';

/**
 * Validates a JWT against its issuer's JWKS (fetched and cached by jose, refetched on an unknown
 * kid), maps it to the canonical subject, and takes the permissions from the subject's active
 * role assignment in the requested tenant.
 */
export class JoseJwtAuthenticator implements JwtAuthenticator {
  private readonly issuers = new Map<string, { config: JwtIssuer; jwks: JWTVerifyGetKey }>();

  constructor(
    issuers: JwtIssuer[],
    private readonly subjects: SubjectResolver,
    options: JwksOptions = {},
  ) {
    for (const config of issuers) {
      const jwks = createRemoteJWKSet(new URL(config.jwks_uri), {
        cacheMaxAge: options.cacheMaxAgeMs ?? 10 * 60_000,
        cooldownDuration: options.cooldownMs ?? 30_000,
        timeoutDuration: options.timeoutMs ?? 5_000,
      });
      this.issuers.set(config.issuer, { config, jwks });
    }
  }

  async authenticate(token: string, tenantId: string | null): Promise<Principal> {
    const { subjectId, issuedFor } = await this.verify(token);
    return principalOfSubject(this.subjects, subjectId, tenantId, issuedFor);
  }

  async verifies(token: string): Promise<boolean> {
    return this.verify(token).then(
      () => true,
      () => false,
    );
  }

  /** The canonical subject id of a valid token, and the tenant it was issued for; 401 for anything else. */
  async verify(token: string): Promise<VerifiedToken> {
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      throw unauthorized(INVALID);
    }
    const issuer = typeof iss === 'string' ? this.issuers.get(iss) : undefined;
    if (!issuer) throw unauthorized(INVALID);
    let sub: unknown;
    let tid: unknown;
    try {
      const { payload } = await jwtVerify(token, issuer.jwks, {
        issuer: issuer.config.issuer,
        audience: issuer.config.audience,
        algorithms: ACCEPTED_ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['exp', 'sub'],
      });
      sub = payload.sub;
      tid = payload.tid;
    } catch (err) {
      throw mapJoseError(err);
    }
    if (typeof sub !== 'string' || sub.length === 0 || sub.length > 200 || /\s/.test(sub))
      throw unauthorized(INVALID);
    const { name, subject_scheme } = issuer.config;
    if (subject_scheme === 'wallet') {
      // Identity's wallet sign-in issues every token for one tenant; one without it is not one of its tokens.
      if (typeof tid !== 'string' || !TENANT_ID.test(tid)) throw unauthorized(INVALID);
      return { subjectId: `wallet:${sub}`, issuedFor: tid };
    }
    // Another issuer's `tid` is its own notion (Entra ID's directory, say), never one of our tenants.
    return { subjectId: subject_scheme === 'oidc' ? `oidc:${name}:${sub}` : `${subject_scheme}:${sub}` };
  }
}

/** A verified token: its canonical subject and, for a token issued for one tenant, that tenant. */
export interface VerifiedToken {
  subjectId: string;
  issuedFor?: string;
}

export const TOKEN_OF_ANOTHER_TENANT = 'This token was issued for another tenant';

/**
 * The principal of a verified JWT subject in the tenant it calls (the X-Tenant-Id, or the path's):
 * the permissions of its active role assignment there. Every JWT caller, of a configured issuer or
 * of the development sign-in, is made a principal here. A token issued for one tenant (`issuedFor`:
 * wallet and development sign-ins) is valid in that tenant only, whatever roles the subject holds
 * elsewhere: a sign-in proves who the person is to that tenant, not to every tenant.
 */
export async function principalOfSubject(
  subjects: SubjectResolver,
  subjectId: string,
  tenantId: string | null,
  issuedFor?: string,
): Promise<Principal> {
  if (tenantId === null) throw badRequest('X-Tenant-Id is required for a JWT caller on this route');
  if (issuedFor !== undefined && tenantId !== issuedFor) throw unauthorized(TOKEN_OF_ANOTHER_TENANT);
  const subject = await subjects.resolve(tenantId, subjectId);
  // No assignment: the tenant does not exist for this subject (docs/API.md, "Authentication"), rather than 403.
  if (!subject) throw notFound('Tenant not found');
  return {
    tenantId: subject.tenant_id,
    actor: { type: 'user', subject_id: subjectId },
    permissions: subject.permissions,
    plan: subject.plan,
  };
}

/** A bad token is 401; a provider whose JWKS cannot be fetched is the gateway's dependency being down (503). */
function mapJoseError(err: unknown) {
  if (err instanceof errors.JWTExpired) return unauthorized('Bearer token expired');
  if (
    err instanceof errors.JWKSTimeout ||
    err instanceof errors.JWKSInvalid ||
    !(err instanceof errors.JOSEError) ||
    err.code === 'ERR_JOSE_GENERIC'
  ) {
    return serviceUnavailable('Identity provider unavailable');
  }
  return unauthorized(INVALID);
}
