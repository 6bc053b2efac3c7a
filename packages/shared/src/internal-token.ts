import { SignJWT, jwtVerify } from 'jose';
import { z } from 'zod';
import type { NextFunction, Request, Response } from 'express';
import { unauthorized } from './errors';

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
const AUDIENCE = 'mandate-internal';
const TOKEN_TTL_SECONDS = 60;

export interface InternalTokens {
  mint(ctx: CallerContext): Promise<string>;
  verify(token: string): Promise<CallerContext>;
}

export function internalTokens(secret: string): InternalTokens {
  if (secret.length < 32) throw new Error('INTERNAL_TOKEN_SECRET must be at least 32 characters');
  const key = new TextEncoder().encode(secret);
  return {
    mint: (ctx) =>
      new SignJWT({ tid: ctx.tenantId, act: ctx.actor, perms: ctx.permissions, rid: ctx.requestId })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(`${TOKEN_TTL_SECONDS}s`)
        .sign(key),
    verify: async (token) => {
      const { payload } = await jwtVerify(token, key, { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] });
      const claims = claimsSchema.parse(payload);
      return { tenantId: claims.tid, actor: claims.act, permissions: claims.perms, requestId: claims.rid };
    },
  };
}

declare module 'express-serve-static-core' {
  interface Request {
    caller?: CallerContext;
    requestId?: string;
  }
}

/** Every service route sits behind this: no valid internal token → 401, whatever else the request carries. */
export function requireInternalToken(tokens: InternalTokens) {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const token = req.header(INTERNAL_TOKEN_HEADER);
    if (!token) return next(unauthorized('Missing internal token'));
    try {
      req.caller = await tokens.verify(token);
      next();
    } catch {
      next(unauthorized('Invalid internal token'));
    }
  };
}

/** The caller context of a request that passed requireInternalToken. */
export function callerOf(req: Request): CallerContext {
  if (!req.caller) throw unauthorized('Missing internal token');
  return req.caller;
}

/** The tenant of a tenant-scoped request; platform calls without one are refused. */
export function tenantOf(req: Request): string {
  const tenantId = callerOf(req).tenantId;
  if (!tenantId) throw unauthorized('Tenant context required');
  return tenantId;
}
