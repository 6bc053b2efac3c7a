import type { RouteContract } from '@mandate/shared/contract';
import { ROUTES, type RouteRule, type Scope } from '@mandate/gateway';
import { ROLE_PERMISSIONS, type Role } from '@mandate/identity';
import { apiClient } from './stack';

/**
 * What the generated cases need from a running stack. Tenant A owns real resources; tenant B is
 * the stranger. Credentials are `tenantId:secret` strings as sent after `Bearer `.
 */
export interface RouteSecurityContext {
  baseUrl: string;
  tenantId: string;
  /**
   * A real resource of tenant A per path collection: the segment before a parameter names it
   * (`/v1/mandates/:id` → `mandates`, `/v1/tenants/:tenantId/api-keys/:keyId` → `api-keys`).
   */
  resources: Record<string, string>;
  /** Tenant A's keys: one revoked (all scopes), and per scope one holding every other scope. */
  revokedKey: string;
  keyWithout: (scope: Scope) => string;
  /** Tenant B: its id and a key with every scope. */
  stranger: { tenantId: string; key: string };
  /** JWT callers (optional): tokens of subjects with the given role in tenant A, and of a subject known only to tenant B. */
  jwt?: { asRole: (role: Role) => string; stranger: string };
}

const UNAUTHORIZED = { error: 'UNAUTHORIZED', message: expect.any(String) };
const INVALID_KEY = 'Invalid or missing API key';
const MALFORMED = 'Malformed Bearer value (expected Bearer tenantId:apiKey)';
const DOCUMENTED_SCOPES: Scope[] = [
  'mandates:read',
  'mandates:write',
  'verify',
  'events:read',
  'tenants:admin',
];

/** Tenant routes any credential of the tenant may call, by design without a scope (GET /v1/me: who am I). */
export const UNSCOPED_TENANT_ROUTES = ['GET /v1/me'];

export const routeKey = (rule: RouteRule) => `${rule.method} ${rule.path}`;

/** The rule's path with tenant A's resources filled in; the tenant segment may be another tenant's. */
export function concretePath(rule: RouteRule, ctx: RouteSecurityContext, tenantId = ctx.tenantId): string {
  const segments = rule.path.split('/');
  return segments
    .map((segment, i) => {
      if (!segment.startsWith(':')) return segment;
      if (segment === ':tenantId') return tenantId;
      const collection = segments[i - 1] ?? '';
      const id = ctx.resources[collection];
      if (!id) {
        throw new Error(
          `route-security: no resource of tenant A for ${routeKey(rule)} (${segment} after /${collection}/): add one to the fixture's resources`,
        );
      }
      return encodeURIComponent(id);
    })
    .join('/')
    .concat(REQUIRED_QUERIES[routeKey(rule)] ?? '');
}

/**
 * Queries a route validates before it looks its resource up: without them every caller gets the
 * same 400, and the 404 of another tenant's resource is never reached (docs/API.md#proving-the-log).
 */
const REQUIRED_QUERIES: Record<string, string> = {
  'GET /v1/events/:id/inclusion-proof': '?tree_size=1',
};

export interface RouteSecurityOptions {
  routes?: RouteRule[];
  /**
   * Bodies for routes that need one to reach their resource lookup (POST /v1/verify names its
   * mandate in the body; PATCH validates before it looks up), keyed `METHOD /v1/path` as in the table.
   */
  bodies?: Record<string, (ctx: RouteSecurityContext) => unknown>;
  /** Whether the context carries JWT callers (then every tenant route also gets the JWT cases). */
  jwt?: boolean;
  /**
   * What a public route answers without a credential when that is not its one declared success
   * status (its body, if any, from `bodies`): e.g. a wallet's response route that refuses a
   * made-up response. Keyed like `bodies`; the reason says why the route cannot succeed here.
   */
  publicAnswers?: Record<string, { status: number; error: string; reason: string }>;
}

/**
 * The status a public route must answer in the generated case: its only declared 2xx status (a
 * declared 304 answers only a conditional request, which the generated case is not).
 */
function successStatus(rule: RouteRule): number {
  const statuses = Object.keys((rule as Partial<RouteContract>).responses ?? {})
    .map(Number)
    .filter((status) => status >= 200 && status < 300);
  if (statuses.length !== 1)
    throw new Error(
      `route-security: ${routeKey(rule)} declares ${statuses.length} success statuses; name the one in publicAnswers`,
    );
  return statuses[0]!;
}

async function send(
  ctx: RouteSecurityContext,
  rule: RouteRule,
  path: string,
  headers: Record<string, string>,
  bodies: RouteSecurityOptions['bodies'] = {},
) {
  const body = bodies[routeKey(rule)]?.(ctx);
  // A body that is not JSON stays text: the assertion below shows it.
  const res = await apiClient(ctx.baseUrl)(rule.method, path, { headers, body });
  return {
    route: routeKey(rule),
    path,
    status: res.status,
    body: res.body as { error?: string; message?: string } | undefined,
  };
}

const bearer = (credential: string) => ({ authorization: `Bearer ${credential}` });
/** A well-formed key of tenant A that was never issued. */
const unknownKey = (ctx: RouteSecurityContext) => `${ctx.tenantId}:msk_${'Q'.repeat(43)}`;

/** Which of the four roles holds none of the permissions the route accepts (for the JWT 403 case). */
function roleLacking(accepted: readonly string[]): Role | undefined {
  return (Object.keys(ROLE_PERMISSIONS) as Role[]).find(
    (role) => !accepted.some((p) => (ROLE_PERMISSIONS[role] as readonly string[]).includes(p)),
  );
}

/**
 * Generates the security cases for every route of the gateway's table (docs/API.md, "Errors", "Authentication"): no
 * credential, malformed Bearer, unknown key and revoked key → 401; a key lacking the scope →
 * 403 naming it; another tenant's resource → 404; and for JWT callers, a subject without an
 * assignment in the tenant → 404 and a role lacking the permission → 403. Operator routes get
 * the 401 cases (a tenant credential is never the operator); public routes must be served
 * without one. Because it iterates the exported table, a new route gets its cases by existing.
 */
export function describeRouteSecurity(
  getContext: () => RouteSecurityContext,
  options: RouteSecurityOptions = {},
): void {
  const routes = options.routes ?? ROUTES;
  const bodies = options.bodies ?? {};
  describe('the route table', () => {
    it('when a tenant route is declared, then it names a known scope (so the 403 case exists)', () => {
      const missing = routes.filter(
        (r) =>
          r.auth === 'tenant' &&
          (r.scope ? !DOCUMENTED_SCOPES.includes(r.scope) : !UNSCOPED_TENANT_ROUTES.includes(routeKey(r))),
      );
      expect(missing.map(routeKey)).toEqual([]);
    });
  });

  for (const rule of routes) {
    describe(`${rule.method} ${rule.path}`, () => {
      if (rule.auth === 'public') {
        const answer = options.publicAnswers?.[routeKey(rule)];
        const expected = answer
          ? { status: answer.status, body: { error: answer.error } }
          : { status: successStatus(rule) };
        const outcome = answer
          ? `is not refused but answers ${answer.status} ${answer.error} (${answer.reason})`
          : `is served: ${successStatus(rule)}`;
        it(`when called without a credential, then it ${outcome}`, async () => {
          const res = await send(getContext(), rule, concretePath(rule, getContext()), {}, bodies);
          expect({ status: res.status, body: res.body }).toMatchObject(expected);
        });
        return;
      }

      const path = () => concretePath(rule, getContext());
      const expect401 = async (headers: Record<string, string>, message?: string) => {
        const res = await send(getContext(), rule, path(), headers, bodies);
        expect(res).toMatchObject({
          status: 401,
          body: message ? { error: 'UNAUTHORIZED', message } : UNAUTHORIZED,
        });
        expect(Object.keys(res.body ?? {}).sort()).toEqual(['error', 'message']);
      };
      const tenantRoute = rule.auth === 'tenant';
      /** The route called with a JWT for tenant A (`x-tenant-id`), as the subject the token names. */
      const sendJwt = (ctx: RouteSecurityContext, token: string) =>
        send(ctx, rule, path(), { ...bearer(token), 'x-tenant-id': ctx.tenantId }, bodies);

      it('when there is no credential, then 401', () => expect401({}, tenantRoute ? INVALID_KEY : undefined));
      it('when the Bearer value is malformed, then 401', () =>
        expect401(bearer('not-a-credential'), tenantRoute ? MALFORMED : undefined));
      it('when the key is unknown, then 401', () =>
        expect401(bearer(unknownKey(getContext())), tenantRoute ? INVALID_KEY : undefined));
      it('when the key is revoked, then 401', () =>
        expect401(bearer(getContext().revokedKey), tenantRoute ? INVALID_KEY : undefined));

      if (rule.auth === 'operator') {
        it('when a valid tenant key with every scope calls, then 401 (only the operator token opens the platform surface)', () =>
          expect401(bearer(getContext().stranger.key)));
        if (options.jwt) {
          it('when a JWT tenant admin calls, then 401', () =>
            expect401(bearer(getContext().jwt!.asRole('tenant_admin'))));
        }
        return;
      }

      if (!rule.scope) {
        // Any credential of the tenant may call it: no scope to lack, so no 403 to provoke.
        it('when any valid key calls, then it is served', async () => {
          const res = await send(
            getContext(),
            rule,
            path(),
            bearer(getContext().keyWithout('verify')),
            bodies,
          );
          expect(res.status).toBe(200);
        });
        if (options.jwt) {
          it('when a JWT caller of any tenant role calls, then it is served', async () => {
            const ctx = getContext();
            for (const role of Object.keys(ROLE_PERMISSIONS) as Role[]) {
              const res = await sendJwt(ctx, ctx.jwt!.asRole(role));
              expect({ role, status: res.status }).toEqual({ role, status: 200 });
            }
          });
          it('when a JWT subject with no assignment in tenant A calls, then 404 for that tenant', async () => {
            const ctx = getContext();
            const res = await sendJwt(ctx, ctx.jwt!.stranger);
            expect(res).toMatchObject({
              status: 404,
              body: { error: 'NOT_FOUND', message: 'Tenant not found' },
            });
          });
        }
        return;
      }
      const scope = rule.scope;
      const scopes = rule.scopes ?? [scope];
      if (scopes.length === 1) {
        it(`when the key lacks ${scope}, then 403 naming the scope`, async () => {
          const res = await send(getContext(), rule, path(), bearer(getContext().keyWithout(scope)), bodies);
          expect(res).toMatchObject({
            status: 403,
            body: { error: 'FORBIDDEN', message: `API key lacks required scope: ${scope}` },
          });
        });
      } else {
        // Any one of several scopes opens it: a key lacking one but holding the others passes.
        it(`when the key lacks one of ${scopes.join(', ')} but holds another, then it is not refused`, async () => {
          for (const lacking of scopes) {
            const res = await send(
              getContext(),
              rule,
              path(),
              bearer(getContext().keyWithout(lacking)),
              bodies,
            );
            expect([lacking, res.status]).not.toEqual([lacking, 403]);
          }
        });
      }

      const names = rule.path.split('/').filter((s) => s.startsWith(':'));
      if (names.length > 0 || bodies[routeKey(rule)]) {
        it("when another tenant's key names tenant A's resource, then 404", async () => {
          const ctx = getContext();
          const res = await send(ctx, rule, path(), bearer(ctx.stranger.key), bodies);
          expect(res).toMatchObject({ status: 404, body: { error: 'NOT_FOUND' } });
        });
      } else {
        // Nothing of tenant A to name here (a list or a create in the caller's own tenant), so the
        // isolation check is that the stranger's answer carries nothing of tenant A.
        it("when another tenant's key calls, then its answer holds nothing of tenant A", async () => {
          const ctx = getContext();
          const res = await send(ctx, rule, path(), bearer(ctx.stranger.key), bodies);
          expect(res.status).toBeLessThan(500);
          expect(JSON.stringify(res.body)).not.toContain(ctx.tenantId);
        });
      }

      if (names.includes(':tenantId') && names.length > 1) {
        it("when another tenant's key names tenant A's resource under its own tenant path, then 404", async () => {
          const ctx = getContext();
          const res = await send(
            ctx,
            rule,
            concretePath(rule, ctx, ctx.stranger.tenantId),
            bearer(ctx.stranger.key),
            bodies,
          );
          expect(res).toMatchObject({ status: 404, body: { error: 'NOT_FOUND' } });
        });
      }

      if (!options.jwt) return;
      it('when a JWT subject with no assignment in tenant A calls, then 404 for that tenant', async () => {
        const ctx = getContext();
        const res = await sendJwt(ctx, ctx.jwt!.stranger);
        expect(res).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', message: 'Tenant not found' } });
      });

      const accepted = rule.permissions ?? [scope];
      const lacking = roleLacking(accepted);
      if (lacking) {
        it(`when a JWT ${lacking} (lacking ${accepted.join(' or ')}) calls, then 403 naming the permission`, async () => {
          const ctx = getContext();
          const res = await sendJwt(ctx, ctx.jwt!.asRole(lacking));
          expect(res).toMatchObject({
            status: 403,
            body: { error: 'FORBIDDEN', message: `Missing required permission: ${accepted.join(' or ')}` },
          });
        });
      } else {
        // No tenant role lacks the permission, so there is no 403 to provoke: check instead that
        // a JWT caller of every role gets through the permission check.
        it(`when a JWT caller of any tenant role calls, then it is not refused (every role holds ${accepted.join(' or ')})`, async () => {
          const ctx = getContext();
          for (const role of Object.keys(ROLE_PERMISSIONS) as Role[]) {
            const res = await sendJwt(ctx, ctx.jwt!.asRole(role));
            expect({ role, status: res.status, refused: [401, 403].includes(res.status) }).toMatchObject({
              role,
              refused: false,
            });
          }
        });
      }
    });
  }
}
