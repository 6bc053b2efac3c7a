import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { closeServer, listenOn } from '@mandate/shared/testing';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK, type JWTPayload } from 'jose';

/**
 * A real JWKS endpoint on loopback for tests: it signs tokens with keys it makes, serves their
 * public halves at /jwks.json, counts fetches, and can add keys later (to show that an unknown
 * kid makes the gateway fetch the set again).
 */
export interface JwksServer {
  url: string;
  jwksUri: string;
  issuer: string;
  /** How many times the key set was fetched. */
  fetches(): number;
  /** Makes a new signing key; `publish: false` keeps it out of the served set (an unknown kid). */
  addKey(options?: { alg?: 'ES256' | 'RS256'; publish?: boolean }): Promise<string>;
  /** Publishes a key made with publish: false. */
  publish(kid: string): void;
  /** Signs claims with the given (default: first) key; iss, iat and exp default sensibly. */
  sign(
    claims: JWTPayload & { aud?: string | string[] },
    options?: { kid?: string; expiresIn?: string | number },
  ): Promise<string>;
  close(): Promise<void>;
}

/** JWT_ISSUERS for a gateway that trusts `jwks` as the dashboard's issuer (subject scheme dashboard). */
export function dashboardIssuers(jwks: JwksServer, audience: string): string {
  return JSON.stringify([
    { name: 'dashboard', issuer: jwks.issuer, jwks_uri: jwks.jwksUri, audience, subject_scheme: 'dashboard' },
  ]);
}

interface Key {
  kid: string;
  alg: 'ES256' | 'RS256';
  privateKey: CryptoKey;
  jwk: JWK;
  published: boolean;
}

export async function startJwksServer(options: { issuer?: string } = {}): Promise<JwksServer> {
  const keys: Key[] = [];
  let fetches = 0;
  const server: Server = createServer((req, res) => {
    if (req.url === '/jwks.json') {
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: keys.filter((k) => k.published).map((k) => k.jwk) }));
      return;
    }
    res.writeHead(404).end();
  });
  const url = await listenOn(server);
  const issuer = options.issuer ?? `${url}/issuer/${randomUUID()}`;

  const api: JwksServer = {
    url,
    jwksUri: `${url}/jwks.json`,
    issuer,
    fetches: () => fetches,
    async addKey({ alg = 'ES256', publish = true } = {}) {
      const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
      const kid = randomUUID();
      const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
      keys.push({ kid, alg, privateKey, jwk, published: publish });
      return kid;
    },
    publish(kid) {
      const key = keys.find((k) => k.kid === kid);
      if (!key) throw new Error(`unknown kid ${kid}`);
      key.published = true;
    },
    async sign(claims, { kid, expiresIn = '5m' } = {}) {
      const key = kid ? keys.find((k) => k.kid === kid) : keys[0];
      if (!key) throw new Error('no signing key: call addKey() first');
      const jwt = new SignJWT(claims)
        .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
        .setIssuedAt();
      if (claims.iss === undefined) jwt.setIssuer(issuer);
      if (claims.exp === undefined) jwt.setExpirationTime(expiresIn);
      return jwt.sign(key.privateKey);
    },
    close: () => closeServer(server),
  };
  await api.addKey();
  return api;
}

/** An unsecured token (alg: none) with the given claims: must never be accepted. */
export function unsecuredToken(claims: JWTPayload): string {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${enc({ alg: 'none', typ: 'JWT' })}.${enc(claims)}.`;
}
