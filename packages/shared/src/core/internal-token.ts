import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { configError } from './config';

/**
 * Who is calling, as established by the gateway. It travels to services inside a short-lived
 * HS256 token (X-Internal-Token) so that a tenant header alone never grants anything.
 */
export const actorSchema = z.object({
  type: z.enum(['api_key', 'user', 'operator', 'system']),
  key_id: z.string().optional(),
  subject_id: z.string().optional(),
});
export type Actor = z.infer<typeof actorSchema>;

export interface CallerContext {
  tenantId: string | null;
  actor: Actor;
  permissions: string[];
  requestId: string;
}

const claimsSchema = z.object({
  tid: z.string().nullable(),
  act: actorSchema,
  perms: z.array(z.string()),
  rid: z.string(),
});

export const INTERNAL_TOKEN_HEADER = 'x-internal-token';
const ISSUER = 'mandate-gateway';
/** The services a token can be minted for; each accepts only tokens naming it (docs/API.md, "Hardening"). */
export const INTERNAL_SERVICES = ['mandates', 'verify', 'identity', 'audit'] as const;
export type InternalService = (typeof INTERNAL_SERVICES)[number];
/** `aud` of a token for `service`; prefixed so no other JWT of the platform can carry the same audience. */
const audienceOf = (service: InternalService) => `mandate-internal:${service}`;
const TOKEN_TTL_SECONDS = 60;
/** Verified tokens kept per process (a token is reused for a few seconds by the gateway). */
const VERIFIED_CACHE_MAX = 10_000;

export interface InternalTokens {
  /** A token only `audience` accepts (an array only in tests that call several stand-ins with one token). */
  mint(ctx: CallerContext, audience: InternalService | readonly InternalService[]): Promise<string>;
  /** The caller of a token minted for `audience` (a service's own name; several only for test stand-ins); any other token throws. */
  verify(token: string, audience: InternalService | readonly InternalService[]): Promise<CallerContext>;
}

const b64url = (data: string | Buffer) => Buffer.from(data).toString('base64url');
const HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));

/**
 * HS256 JWTs (the same compact format jose produces) signed and checked with node:crypto's HMAC:
 * WebCrypto cost ~100 µs per sign or verify on the hot path, node:crypto a few µs. A token that
 * verified once is remembered until it expires, so a token the gateway reuses costs one lookup.
 */
export function internalTokens(secret: string, now: () => number = Date.now): InternalTokens {
  if (secret.length < 32)
    throw configError('INTERNAL_TOKEN_SECRET', 'must be at least 32 characters (e.g. openssl rand -hex 32)');
  const key = Buffer.from(secret, 'utf8');
  const sign = (input: string) => createHmac('sha256', key).update(input).digest();
  const verified = new Map<string, { ctx: CallerContext; exp: number; aud: unknown }>();

  const check = (token: string): { ctx: CallerContext; exp: number; aud: unknown } => {
    const parts = token.split('.');
    if (parts.length !== 3) throw new Error('malformed token');
    const [h, p, s] = parts as [string, string, string];
    const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (header.alg !== 'HS256' || header.crit !== undefined) throw new Error('unexpected token header');
    const expected = sign(`${h}.${p}`);
    const given = Buffer.from(s, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw new Error('bad signature');
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;
    const at = Math.floor(now() / 1000);
    if (payload.iss !== ISSUER) throw new Error('unexpected issuer');
    if (typeof payload.exp !== 'number' || payload.exp <= at) throw new Error('token expired');
    if (payload.nbf !== undefined && (typeof payload.nbf !== 'number' || payload.nbf > at))
      throw new Error('token not yet valid');
    const claims = claimsSchema.parse(payload);
    return {
      ctx: { tenantId: claims.tid, actor: claims.act, permissions: claims.perms, requestId: claims.rid },
      exp: payload.exp * 1000,
      aud: payload.aud,
    };
  };
  return {
    mint: async (ctx, audience) => {
      const iat = Math.floor(now() / 1000);
      const payload = b64url(
        JSON.stringify({
          tid: ctx.tenantId,
          act: ctx.actor,
          perms: ctx.permissions,
          rid: ctx.requestId,
          iss: ISSUER,
          aud: typeof audience === 'string' ? audienceOf(audience) : audience.map(audienceOf),
          iat,
          exp: iat + TOKEN_TTL_SECONDS,
        }),
      );
      return `${HEADER}.${payload}.${sign(`${HEADER}.${payload}`).toString('base64url')}`;
    },
    verify: async (token, audience) => {
      let entry = verified.get(token);
      if (!entry || entry.exp <= now()) {
        entry = check(token);
        if (verified.size >= VERIFIED_CACHE_MAX) verified.clear();
        verified.set(token, entry);
      }
      // Checked on every use, cache hits included: a valid token for another service is still refused.
      if (!addressedTo(entry.aud, audience)) throw new Error('unexpected audience');
      return copy(entry.ctx);
    },
  };
}

/** Whether a token's `aud` names (one of) these services. */
const addressedTo = (aud: unknown, audience: InternalService | readonly InternalService[]) =>
  (typeof audience === 'string' ? [audience] : audience).some((service) => {
    const expected = audienceOf(service);
    return aud === expected || (Array.isArray(aud) && aud.includes(expected));
  });

// Callers may decorate what they get back; the cached original stays untouched.
const copy = (ctx: CallerContext): CallerContext => ({
  ...ctx,
  actor: { ...ctx.actor },
  permissions: [...ctx.permissions],
});

/**
 * The gateway's minter: one token per caller (tenant, actor, permissions) and audience, reused for `reuseMs`
 * (far below the token's 60 s lifetime), instead of one HMAC and one JSON per request. The
 * request id then travels in X-Request-Id, which services prefer over the token's `rid`.
 */
export class CachedTokenMinter {
  private readonly cache = new Map<string, { token: Promise<string>; until: number }>();

  constructor(
    private readonly tokens: InternalTokens,
    private readonly reuseMs = 10_000,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 10_000,
  ) {}

  mint(ctx: Omit<CallerContext, 'requestId'>, audience: InternalService): Promise<string> {
    const { actor } = ctx;
    const key = `${audience}\u0000${ctx.tenantId ?? ''}\u0000${actor.type}\u0000${actor.key_id ?? ''}\u0000${actor.subject_id ?? ''}\u0000${ctx.permissions.join(' ')}`;
    const at = this.now();
    const hit = this.cache.get(key);
    if (hit && hit.until > at) return hit.token;
    const token = this.tokens.mint({ ...ctx, requestId: 'gateway' }, audience);
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    this.cache.set(key, { token, until: at + this.reuseMs });
    token.catch(() => this.cache.delete(key));
    return token;
  }
}
