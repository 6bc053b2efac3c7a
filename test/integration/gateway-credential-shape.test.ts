import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { testTokens } from '@mandate/shared/testing';
import {
  createApp,
  type GatewayApp,
  JoseJwtAuthenticator,
  parseJwtIssuers,
  CachedKeyResolver,
  CachedSubjectResolver,
} from '@mandate/gateway/testing';
import { startJwksServer, type JwksServer } from '../support/jwks-server';
import { NullPublisher, startInProcessUpstreams, type InProcessUpstreams } from './in-process-upstreams';

const silent = createLogger('gateway-credential-shape-test', 'silent');

/**
 * docs/API.md, "Hardening": a credential that cannot be valid is 401, a malformed X-Tenant-Id 400, never the 503
 * the gateway used to make of identity's 400 — against the real identity service in-process.
 */
describe('gateway: credentials that cannot be valid (real identity in-process)', () => {
  let jwks: JwksServer;
  let inProcess: InProcessUpstreams;
  let gateway: GatewayApp;
  let base: string;

  beforeAll(async () => {
    jwks = await startJwksServer();
    inProcess = await startInProcessUpstreams(silent);
    const identityClient = inProcess.upstreams.identity;
    const issuers = parseJwtIssuers(
      JSON.stringify([
        // The longest name a provider may have, so that oidc:<name>:<sub> can outgrow identity's bound.
        {
          name: 'p'.repeat(64),
          issuer: jwks.issuer,
          jwks_uri: jwks.jwksUri,
          audience: 'api',
          subject_scheme: 'oidc',
        },
      ]),
    );
    gateway = createApp({
      tokens: testTokens,
      logger: silent,
      publisher: new NullPublisher(),
      upstreams: inProcess.upstreams,
      keys: new CachedKeyResolver(identityClient, testTokens, 0),
      operatorToken: 'operator-token-for-credential-shape-tests',
      jwt: new JoseJwtAuthenticator(issuers, new CachedSubjectResolver(identityClient, testTokens, 0)),
      openApiDocument: () => ({}),
    });
    base = (await gateway.start(0)).url;
  });

  afterAll(async () => {
    await gateway.stop();
    await inProcess.close();
    await jwks.close();
  });

  const get = async (path: string, headers: Record<string, string>) => {
    const res = await fetch(base + path, { headers });
    return { status: res.status, body: (await res.json()) as unknown };
  };
  const invalidKey = { status: 401, body: { error: 'UNAUTHORIZED', message: 'Invalid or missing API key' } };

  it('when X-Api-Key holds 201 characters, then 401, not 503', async () => {
    expect(await get('/v1/mandates', { 'x-api-key': 'k'.repeat(201) })).toEqual(invalidKey);
  });

  it('when a Bearer tenantId:key holds a 201-character key, then 401, not 503', async () => {
    expect(await get('/v1/mandates', { authorization: `Bearer ${newId('tnt')}:${'k'.repeat(201)}` })).toEqual(
      invalidKey,
    );
  });

  it('when a valid JWT comes with a 300-character X-Tenant-Id, then 400 naming the header, not 503', async () => {
    const token = await jwks.sign({ sub: 'alice', aud: 'api' });
    const res = await get('/v1/mandates', {
      authorization: `Bearer ${token}`,
      'x-tenant-id': 't'.repeat(300),
    });
    expect(res).toEqual({
      status: 400,
      body: {
        error: 'BAD_REQUEST',
        message: 'X-Tenant-Id must be a tenant id (tnt_ followed by 26 lowercase letters or digits)',
      },
    });
  });

  it('when a valid JWT names a 300-character tenant in the path, then 404 like any unknown tenant', async () => {
    const token = await jwks.sign({ sub: 'alice', aud: 'api' });
    const res = await get(`/v1/tenants/${'t'.repeat(300)}`, { authorization: `Bearer ${token}` });
    expect(res).toEqual({ status: 404, body: { error: 'NOT_FOUND', message: 'Tenant not found' } });
  });

  it('when identity refuses a subject as too long (400), then the gateway answers 404 for that tenant, not 503', async () => {
    // oidc:<64-character name>:<200-character sub> is over identity's 256-character bound.
    const token = await jwks.sign({ sub: 's'.repeat(200), aud: 'api' });
    const res = await get('/v1/mandates', { authorization: `Bearer ${token}`, 'x-tenant-id': newId('tnt') });
    expect(res).toEqual({ status: 404, body: { error: 'NOT_FOUND', message: 'Tenant not found' } });
  });
});
