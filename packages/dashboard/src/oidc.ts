import * as oauth from 'oauth4webapi';
import type { OidcConfig } from './config';

/**
 * The OIDC sign-in: authorization code with PKCE (S256), a public client (no secret), with
 * oauth4webapi. The code verifier and state wait in sessionStorage (this tab only) while the
 * browser is at the provider; the access token is never in a URL.
 */
const PENDING = 'mandate-dashboard-oidc-pending';

interface Pending {
  issuer: string;
  codeVerifier: string;
  state: string;
}

export const callbackUrl = () => `${location.origin}/dashboard/callback`;

/** http is allowed for a loopback issuer only (a provider on this machine, in development and tests). */
function httpOptions(issuer: URL) {
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(issuer.hostname);
  return { [oauth.allowInsecureRequests]: issuer.protocol === 'http:' && loopback };
}

async function discover(config: OidcConfig): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(config.issuer);
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...httpOptions(issuer) });
  return oauth.processDiscoveryResponse(issuer, response);
}

/** Discovery, a fresh PKCE pair and state, then the browser goes to the provider's authorization endpoint. */
export async function beginOidcSignIn(config: OidcConfig): Promise<void> {
  const as = await discover(config);
  if (!as.authorization_endpoint) throw new Error(`${config.issuer} publishes no authorization endpoint`);
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const pending: Pending = { issuer: config.issuer, codeVerifier, state };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(as.authorization_endpoint);
  url.searchParams.set('client_id', config.client_id);
  url.searchParams.set('redirect_uri', callbackUrl());
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', config.scope);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', state);
  if (config.audience) url.searchParams.set('resource', config.audience);
  location.assign(url.href);
}

/**
 * Back at /dashboard/callback: checks the state (and the issuer, RFC 9207, when the provider sends
 * it), exchanges the code with the verifier at the token endpoint, and answers the access token.
 * The pending verifier is removed whatever happens: a code is exchanged once.
 */
export async function completeOidcSignIn(config: OidcConfig, callback: URL): Promise<string> {
  const raw = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  const pending = raw ? (JSON.parse(raw) as Pending) : null;
  if (!pending || pending.issuer !== config.issuer)
    throw new Error('This sign-in was not started in this tab (or already finished): start again.');
  const as = await discover(config);
  const client: oauth.Client = { client_id: config.client_id };
  const params = oauth.validateAuthResponse(as, client, callback, pending.state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    params,
    callbackUrl(),
    pending.codeVerifier,
    {
      ...(config.audience ? { additionalParameters: { resource: config.audience } } : {}),
      ...httpOptions(new URL(config.issuer)),
    },
  );
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
  return tokens.access_token;
}

/** The access token between the callback and the tenant choice (sessionStorage, this tab only). */
const TOKEN = 'mandate-dashboard-oidc-token';
export const oidcToken = {
  load: (): string | null => sessionStorage.getItem(TOKEN),
  save: (token: string) => sessionStorage.setItem(TOKEN, token),
  clear: () => sessionStorage.removeItem(TOKEN),
};

/** The token's `sub`, for the page to say who signed in (the gateway checks the token, not this). */
export function subjectOf(token: string): string | undefined {
  try {
    const payload = token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/');
    const sub = (JSON.parse(atob(payload)) as { sub?: unknown }).sub;
    return typeof sub === 'string' ? sub : undefined;
  } catch {
    return undefined;
  }
}
