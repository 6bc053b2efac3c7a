import type { IncomingMessage, ServerResponse } from 'node:http';
import { SignJWT, decodeJwt, exportJWK, generateKeyPair, jwtVerify, type CryptoKey } from 'jose';
import { z } from 'zod';
import {
  AppError,
  badRequest,
  describeZodError,
  notFound,
  unauthorized,
  type InternalTokens,
} from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { ContractClient, parseJsonBody, type ServiceClient } from '@mandate/shared/http';
import { routes } from '@mandate/identity';
import type { JwtAuthenticator, Principal } from '../auth/authenticate';
import { TENANT_ID } from '../auth/authenticate';
import { principalOfSubject } from '../auth/jwt';
import type { SubjectResolver } from '../auth/subject-resolver';
import { isLoopbackHost } from '../http/loopback';

/**
 * The embedded mode's development sign-in (docs/DASHBOARD.md): a person picks a subject of a
 * tenant and gets a short-lived JWT for it, signed by a key that exists only in this process.
 * Only `npm start`'s launcher turns it on (a start override, never a variable), so no deployed
 * gateway can have it. The tokens are ordinary JWT callers afterwards: the subject's active role
 * assignment decides its permissions, exactly as for a token of a configured issuer.
 */
export const DEV_ISSUER = 'urn:mandate:embedded-dev-sign-in';
export const DEV_AUDIENCE = 'mandate-dashboard';
export const DEV_PREFIX = '/dashboard-dev';
const TOKEN_TTL_SECONDS = 60 * 60;
export const NOT_LOOPBACK_HOST =
  'The development sign-in answers only requests addressed to a loopback Host (localhost, 127.x.x.x, [::1])';

const signInBody = z.strictObject({
  tenant_id: z.string().regex(TENANT_ID, { message: 'must be a tenant id' }),
  subject_id: z.string().min(1).max(256),
});
const subjectsQuery = z.strictObject({
  tenant_id: z.string().regex(TENANT_ID, { message: 'must be a tenant id' }),
});

export class DevSignIn {
  private constructor(
    private readonly privateKey: CryptoKey,
    private readonly publicKey: CryptoKey,
    private readonly identity: ContractClient,
    private readonly tokens: InternalTokens,
    private readonly subjects: SubjectResolver,
  ) {}

  static async create(deps: {
    identity: ServiceClient;
    tokens: InternalTokens;
    subjects: SubjectResolver;
    logger: Logger;
  }): Promise<DevSignIn> {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    // Exported once so a broken key fails the start, not the first sign-in.
    await exportJWK(publicKey);
    const identity = new ContractClient(deps.identity, { name: 'identity', logger: deps.logger });
    return new DevSignIn(privateKey, publicKey, identity, deps.tokens, deps.subjects);
  }

  /** The gateway's JWT check: this process's development tokens first, then the configured issuers. */
  authenticator(inner: JwtAuthenticator | undefined): JwtAuthenticator {
    return {
      authenticate: async (token: string, tenantId: string | null): Promise<Principal> => {
        let iss: unknown;
        try {
          iss = decodeJwt(token).iss;
        } catch {
          throw unauthorized('Invalid bearer token');
        }
        if (iss !== DEV_ISSUER) {
          if (!inner) throw unauthorized('Invalid bearer token');
          return inner.authenticate(token, tenantId);
        }
        let sub: unknown;
        let tid: unknown;
        try {
          ({
            payload: { sub, tid },
          } = await jwtVerify(token, this.publicKey, {
            issuer: DEV_ISSUER,
            audience: DEV_AUDIENCE,
            algorithms: ['ES256'],
            requiredClaims: ['exp', 'sub', 'tid'],
          }));
        } catch {
          throw unauthorized('Invalid bearer token');
        }
        if (typeof sub !== 'string' || typeof tid !== 'string') throw unauthorized('Invalid bearer token');
        // Signed in for one tenant: valid in that tenant only (principalOfSubject).
        return principalOfSubject(this.subjects, sub, tenantId, tid);
      },
      verifies: async (token: string): Promise<boolean> => {
        let iss: unknown;
        try {
          iss = decodeJwt(token).iss;
        } catch {
          return false;
        }
        if (iss !== DEV_ISSUER) return (await inner?.verifies?.(token)) ?? false;
        return jwtVerify(token, this.publicKey, {
          issuer: DEV_ISSUER,
          audience: DEV_AUDIENCE,
          algorithms: ['ES256'],
          requiredClaims: ['exp', 'sub', 'tid'],
        }).then(
          () => true,
          () => false,
        );
      },
    };
  }

  /**
   * GET /dashboard-dev/subjects?tenant_id= and POST /dashboard-dev/sign-in, for a request addressed
   * to a loopback Host only: a page of another site that a DNS rebinding points at this port sends
   * its own name as Host. The sign-in takes application/json only, which no other site's page can
   * send here without a CORS preflight this gateway never grants (a form or text/plain can).
   */
  async handle(req: IncomingMessage, res: ServerResponse, path: string, query: string): Promise<void> {
    try {
      if (!isLoopbackHost(req.headers.host)) throw new AppError('FORBIDDEN', NOT_LOOPBACK_HOST);
      if (path === `${DEV_PREFIX}/subjects` && req.method === 'GET') {
        const parsed = subjectsQuery.safeParse(Object.fromEntries(new URLSearchParams(query)));
        if (!parsed.success) throw badRequest(describeZodError(parsed.error, 'query'));
        return send(res, 200, { data: await this.activeSubjects(parsed.data.tenant_id) });
      }
      if (path === `${DEV_PREFIX}/sign-in` && req.method === 'POST') {
        const media = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if (media !== 'application/json') throw badRequest('Content-Type must be application/json');
        const parsed = signInBody.safeParse(await readJson(req));
        if (!parsed.success) throw badRequest(describeZodError(parsed.error));
        const { tenant_id, subject_id } = parsed.data;
        const subject = await this.subjects.resolve(tenant_id, subject_id);
        if (!subject) throw notFound('No active role assignment for this subject in this tenant');
        const expires = Math.floor(Date.now() / 1000) + TOKEN_TTL_SECONDS;
        const token = await new SignJWT({ tid: tenant_id })
          .setProtectedHeader({ alg: 'ES256' })
          .setIssuer(DEV_ISSUER)
          .setAudience(DEV_AUDIENCE)
          .setSubject(subject_id)
          .setIssuedAt()
          .setExpirationTime(expires)
          .sign(this.privateKey);
        return send(res, 200, {
          token,
          tenant_id,
          subject_id,
          roles: subject.roles,
          expires_at: new Date(expires * 1000).toISOString(),
        });
      }
      throw notFound('Route not found');
    } catch (err) {
      if (err instanceof AppError) return send(res, err.status, err.toEnvelope());
      send(res, 500, { error: 'INTERNAL_ERROR', message: 'Development sign-in failed' });
    }
  }

  /** The subjects with an active role assignment in the tenant (the first 500), asked of identity. */
  private async activeSubjects(tenantId: string) {
    const out: { subject_id: string; roles: string[] }[] = [];
    let cursor: string | null = null;
    do {
      const token = await this.tokens.mint(
        {
          tenantId,
          actor: { type: 'system' },
          permissions: ['tenant:read'],
          requestId: 'dev-sign-in',
        },
        'identity',
      );
      const query: { status: 'active'; limit: number; cursor?: string } = {
        status: 'active',
        limit: 100,
        ...(cursor ? { cursor } : {}),
      };
      const answer = await this.identity.call(
        routes.listRoleAssignments,
        { params: { tenantId }, query },
        { token, requestId: 'dev-sign-in' },
      );
      if (answer.status === 404) throw notFound('Tenant not found');
      if (!answer.ok) throw new AppError('SERVICE_UNAVAILABLE', 'Identity service unavailable');
      for (const a of answer.body.data) out.push({ subject_id: a.subject_id, roles: a.roles });
      cursor = answer.body.next_cursor;
    } while (cursor && out.length < 500);
    return out;
  }
}

function send(res: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 16 * 1024) throw badRequest('Body too large');
    chunks.push(chunk as Buffer);
  }
  // The project's one body parser: UTF-8, no `__proto__`-style or repeated member names (docs/API.md, "Hardening").
  return parseJsonBody(Buffer.concat(chunks)) ?? null;
}
