import { existsSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import express from 'express';

/** Where the dashboard is mounted: everything under it is static, served without API authentication. */
export const DASHBOARD_PREFIX = '/dashboard';

export const DASHBOARD_NOT_BUILT =
  'The dashboard is not built: run `npm run build -w @mandate/dashboard` (npm start builds it when missing), or point DASHBOARD_DIR at a build';

/**
 * The dashboard's responses may load scripts, styles and data from this origin only: no inline
 * script or style, no other origin, no framing. `connectOrigins` adds origins the app may call
 * (the OIDC issuer's, for discovery and the token endpoint).
 */
export function dashboardCsp(connectOrigins: readonly string[] = []): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    ["connect-src 'self'", ...connectOrigins].join(' '),
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}
export const DASHBOARD_CSP = dashboardCsp();

/** The OIDC sign-in the dashboard offers (authorization code + PKCE, a public client): docs/DASHBOARD.md. */
export interface DashboardOidc {
  issuer: string;
  client_id: string;
  scope: string;
  /** Sent as the RFC 8707 `resource`: the access token's audience, the gateway's for that issuer. */
  audience?: string;
}

export interface DashboardOptions {
  /** Embedded mode only: the development sign-in. */
  devSignIn?: boolean;
  oidc?: DashboardOidc;
  /** Whether the gateway trusts the wallet sign-in tokens (a JWT_ISSUERS entry with subject scheme wallet). */
  walletSignIn?: boolean;
}

/**
 * The build's default place: packages/dashboard/dist of the repository when running from the
 * sources, dist/dashboard next to the compiled bundle (dist/gateway/main.js) in the image.
 */
export function defaultDashboardDir(): string {
  const candidates = [
    path.resolve(__dirname, '../../../../packages/dashboard/dist'),
    path.resolve(__dirname, '../dashboard'),
    path.resolve(process.cwd(), 'packages/dashboard/dist'),
  ];
  return candidates.find((dir) => existsSync(path.join(dir, 'index.html'))) ?? candidates[0]!;
}

/** Whether a request path is the dashboard's (`/dashboard` or below it): never an API route. */
export function isDashboardPath(p: string): boolean {
  return p === DASHBOARD_PREFIX || p.startsWith(`${DASHBOARD_PREFIX}/`);
}

/**
 * The dashboard's static files: hashed assets cached for a year, index.html (and every deep link
 * under /dashboard/, the single-page app's routes) never cached without revalidation, a strict
 * Content-Security-Policy on every answer. Without a build, a 404 envelope says so.
 */
export function dashboardHandler(dir: string, options: DashboardOptions = {}) {
  // Each sign-in the app offers; the optional ones only when configured.
  const config = JSON.stringify({
    devSignIn: options.devSignIn === true,
    ...(options.walletSignIn ? { walletSignIn: true } : {}),
    ...(options.oidc ? { oidc: options.oidc } : {}),
  });
  const csp = dashboardCsp(options.oidc ? [new URL(options.oidc.issuer).origin] : []);
  const securityHeaders = (res: ServerResponse) => {
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
  };
  const app = express();
  app.disable('x-powered-by');
  app.use((_req, res, next) => {
    securityHeaders(res);
    next();
  });
  // Exactly /dashboard (express's routing would take /dashboard/ for it too): relative asset URLs need the slash.
  app.use((req, res, next) => {
    if (req.path !== DASHBOARD_PREFIX) return next();
    res.redirect(301, `${DASHBOARD_PREFIX}/`);
  });
  // What the app needs to know before sign-in: which sign-ins this gateway offers.
  app.get(`${DASHBOARD_PREFIX}/config.json`, (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.type('application/json').send(config);
  });
  app.use((req, res, next) => {
    if (existsSync(path.join(dir, 'index.html'))) return next();
    res.status(404).json({ error: 'NOT_FOUND', message: DASHBOARD_NOT_BUILT });
  });
  app.use(
    DASHBOARD_PREFIX,
    express.static(dir, {
      index: false,
      redirect: false,
      fallthrough: true,
      setHeaders(res, file) {
        const hashed = file.startsWith(path.join(dir, 'assets') + path.sep);
        res.setHeader('Cache-Control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
      },
    }),
  );
  // A missing asset is a 404; any other path under /dashboard/ is a route of the app: index.html.
  app.use(`${DASHBOARD_PREFIX}/assets`, (_req, res) => {
    res.status(404).json({ error: 'NOT_FOUND', message: 'No such dashboard asset' });
  });
  app.use(DASHBOARD_PREFIX, (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      res.status(405).json({ error: 'METHOD_NOT_ALLOWED', message: 'The dashboard is static: use GET' });
      return;
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(path.join(dir, 'index.html'), (err) => err && next(err));
  });
  return (req: IncomingMessage, res: ServerResponse) => app(req as never, res as never);
}
