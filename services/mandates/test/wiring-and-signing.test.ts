import { compactVerify, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK } from 'jose';
import { fixedClock, parseConfig } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { InProcessBus } from '@mandate/shared/events';
import { SyncedClock, connectMongo } from '@mandate/shared/data';
import { buildOpenApiDocument } from '@mandate/shared/contract';
import { MONGO_TARGET, MONGO_URL, testDatabaseName } from '@mandate/shared/testing';
import { configSchema } from '../src/config';
import { contract } from '../src/contract';
import { LocalSigner } from '../src/signing/local-signer';
import { MemoryMandateStore } from '../src/store/memory-mandate-store';
import { wire } from '../src/wiring';

const logger = createLogger('mandates-test', 'silent');

describe('LocalSigner', () => {
  it('when given LOCAL_SIGNING_KEY, then the kid is the RFC 7638 thumbprint and signatures verify with the public JWK', async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    const privateJwk = await exportJWK(pair.privateKey);
    const a = await LocalSigner.create(JSON.stringify(privateJwk));
    const b = await LocalSigner.create(JSON.stringify(privateJwk));
    expect(a.kid).toBe(b.kid);
    expect(a.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.generated).toBe(false);

    const jws = await a.sign('{"hello":"world"}');
    expect(decodeProtectedHeader(jws)).toEqual({ alg: 'ES256', kid: a.kid });
    const [jwk] = await a.publicJwks();
    expect(jwk).toEqual({
      kty: 'EC',
      crv: 'P-256',
      x: privateJwk.x,
      y: privateJwk.y,
      kid: a.kid,
      alg: 'ES256',
      use: 'sig',
    });
    const { payload } = await compactVerify(jws, await importJWK(jwk!, 'ES256'));
    expect(new TextDecoder().decode(payload)).toBe('{"hello":"world"}');
  });

  it('when LOCAL_SIGNING_KEY is not a private P-256 JWK, then creation fails loudly', async () => {
    await expect(LocalSigner.create('not json')).rejects.toThrow(
      'LOCAL_SIGNING_KEY: must be a JSON private JWK',
    );
    const pair = await generateKeyPair('ES256', { extractable: true });
    const publicOnly = await exportJWK(pair.publicKey);
    await expect(LocalSigner.create(JSON.stringify(publicOnly))).rejects.toThrow('EC P-256 private JWK');
  });

  it('when no key is configured, then one is generated and marked as such', async () => {
    const signer = await LocalSigner.create();
    expect(signer.generated).toBe(true);
    expect(await signer.publicJwks()).toHaveLength(1);
  });
});

describe('config and wiring', () => {
  it('when the environment is empty, then PORT defaults to 8081 and the database to "mandates"', () => {
    const config = parseConfig(configSchema, {});
    expect(config).toMatchObject({ PORT: 8081, HOST: '127.0.0.1', MONGO_DB: 'mandates' });
    expect(config.LOCAL_SIGNING_KEY).toBeUndefined();
  });

  it('when no infrastructure URL is set, then wire builds the embedded adapters', async () => {
    const config = parseConfig(configSchema, { INTERNAL_TOKEN_SECRET: 's'.repeat(32) });
    const { deps, close } = await wire(config, logger);
    try {
      expect(deps.store.kind).toBe('memory');
      expect(deps.publisher.kind).toBe('in-process');
      expect(deps.signer.alg).toBe('ES256');
    } finally {
      await close();
    }
  });

  it("when REDIS_URL is set, then time is decided on Redis's clock (synced at start), unless a clock is injected", async () => {
    const config = parseConfig(configSchema, {
      INTERNAL_TOKEN_SECRET: 's'.repeat(32),
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    });
    const synced = await wire(config, logger);
    const injected = fixedClock('2030-01-01T00:00:00Z');
    const overridden = await wire(config, logger, { clock: injected });
    try {
      // docs/DECISIONS.md, "Time".
      expect(synced.deps.clock).toBeInstanceOf(SyncedClock);
      expect((synced.deps.clock as SyncedClock).synced).toEqual({
        offsetMs: expect.any(Number),
        rttMs: expect.any(Number),
      });
      expect(overridden.deps.clock).toBe(injected);
    } finally {
      await Promise.all([synced.close(), overridden.close()]);
    }
  });

  it('when no MONGO_URL or AMQP_URL is set and overrides are passed, then the overrides are used', async () => {
    const store = new MemoryMandateStore();
    const bus = new InProcessBus(logger);
    const config = parseConfig(configSchema, { INTERNAL_TOKEN_SECRET: 's'.repeat(32) });
    const { deps, close } = await wire(config, logger, { store, publisher: bus });
    try {
      expect(deps.store).toBe(store);
      expect(deps.publisher).toBe(bus);
    } finally {
      await close();
      await bus.close();
    }
  });

  it(`when MONGO_URL is set and a store override is passed too, then the variable wins (${MONGO_TARGET})`, async () => {
    const database = testDatabaseName('mandates_wiring');
    const override = new MemoryMandateStore();
    const config = parseConfig(configSchema, {
      INTERNAL_TOKEN_SECRET: 's'.repeat(32),
      MONGO_URL: MONGO_URL!,
      MONGO_DB: database,
    });
    const { deps, close } = await wire(config, logger, { store: override });
    const check = await connectMongo(MONGO_URL!, database, logger);
    try {
      expect(deps.store).not.toBe(override);
      expect(deps.store.kind).toBe('mongo');
    } finally {
      await close();
      await check.dropDatabase();
      await check.close();
    }
  });

  it('when INTERNAL_TOKEN_SECRET is missing and no tokens are passed, then wire refuses to start', async () => {
    await expect(wire(parseConfig(configSchema, {}), logger)).rejects.toThrow(
      'INTERNAL_TOKEN_SECRET: is required',
    );
  });
});

describe('OpenAPI contribution', () => {
  it('when assembled, then every public mandates path is documented under /v1 and the internal one is not', () => {
    const doc = buildOpenApiDocument(contract);
    expect(Object.keys(doc.paths ?? {}).sort()).toEqual([
      '/v1/.well-known/jwks.json',
      '/v1/authorizations/{id}',
      '/v1/authorizations/{id}/capture',
      '/v1/authorizations/{id}/void',
      '/v1/mandates',
      '/v1/mandates/{id}',
      '/v1/mandates/{id}/authorizations',
      '/v1/mandates/{id}/budget',
      '/v1/mandates/{id}/reactivate',
      '/v1/mandates/{id}/revoke',
      '/v1/mandates/{id}/suspend',
      '/v1/status-lists/{list_id}',
    ]);
    expect(Object.keys(doc.components?.schemas ?? {})).toEqual(
      expect.arrayContaining(['Mandate', 'CreateMandateRequest', 'Party']),
    );
  });
});

describe('LocalSigner.fromFile', () => {
  it('when the key file is absent, then a key is generated into it and reused on the next start', async () => {
    const { mkdtemp, stat } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const path = `${await mkdtemp(`${tmpdir()}/signing-`)}/key.json`;
    const { LocalSigner } = await import('../src/signing/local-signer');
    const first = await LocalSigner.fromFile(path);
    const second = await LocalSigner.fromFile(path);
    expect(second.kid).toBe(first.kid);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });
});
