/**
 * A real OpenID provider (panva's oidc-provider) for the dashboard's sign-in tests, run as a child
 * process: oidc-provider is ESM only and jest's CommonJS module loader cannot load it.
 *
 * - client OIDC_CLIENT_ID: public (token_endpoint_auth_method none, so PKCE is required),
 *   authorization code, redirect OIDC_REDIRECT_URI, CORS for that origin only (clientBasedCORS);
 * - client `other-app` (secret `other-app-secret`): client credentials, for tokens of another audience;
 * - resource indicators: OIDC_RESOURCE and OIDC_OTHER_RESOURCE, each with scope `api`, access
 *   tokens as ES256 JWTs whose aud is the resource (the gateway verifies them against /jwks);
 * - devInteractions: the built-in login form (any login, any password; the login is the `sub`).
 *
 * Prints one line `{"issuer": "http://127.0.0.1:<port>"}` once it listens; SIGTERM stops it.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import process from 'node:process';
import { URL } from 'node:url';
import Provider, { errors } from 'oidc-provider';

const { OIDC_CLIENT_ID, OIDC_REDIRECT_URI, OIDC_RESOURCE, OIDC_OTHER_RESOURCE } = process.env;
if (!OIDC_CLIENT_ID || !OIDC_REDIRECT_URI || !OIDC_RESOURCE || !OIDC_OTHER_RESOURCE)
  throw new Error('OIDC_CLIENT_ID, OIDC_REDIRECT_URI, OIDC_RESOURCE and OIDC_OTHER_RESOURCE are required');

let handler = (_req, res) => {
  res.statusCode = 503;
  res.end();
};
const server = createServer((req, res) => handler(req, res));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const key = (type, options, kid, alg) => ({
  ...generateKeyPairSync(type, options).privateKey.export({ format: 'jwk' }),
  kid,
  alg,
  use: 'sig',
});
const dashboardOrigin = new URL(OIDC_REDIRECT_URI).origin;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: OIDC_CLIENT_ID,
      token_endpoint_auth_method: 'none',
      redirect_uris: [OIDC_REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
    {
      client_id: 'other-app',
      client_secret: 'other-app-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    },
  ],
  jwks: {
    keys: [
      key('rsa', { modulusLength: 2048 }, 'rsa-1', 'RS256'),
      key('ec', { namedCurve: 'P-256' }, 'ec-1', 'ES256'),
    ],
  },
  cookies: { keys: ['oidc-provider test cookie key'] },
  pkce: { required: () => true },
  findAccount: (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  clientBasedCORS: (_ctx, origin, client) => client.clientId === OIDC_CLIENT_ID && origin === dashboardOrigin,
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        if (resource !== OIDC_RESOURCE && resource !== OIDC_OTHER_RESOURCE) throw new errors.InvalidTarget();
        return {
          scope: 'api',
          audience: resource,
          accessTokenTTL: 10 * 60,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
});
handler = provider.callback();
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
