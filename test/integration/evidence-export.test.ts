import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JWK } from 'jose';
import { canonicalJson, newId, sha256Hex, systemClock } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { EVIDENCE_BUNDLE_MEMBERS, evidenceDigestOf } from '@mandate/shared/mandate';
import { InProcessBus, type AuditEvent } from '@mandate/shared/events';
import { buildOpenApiDocument } from '@mandate/shared/contract';
import { type RunningServer } from '@mandate/shared/http';
import { anyEvent, callService, callerFor, testTokens } from '@mandate/shared/testing';
import {
  createApp as createMandates,
  LocalSigner,
  type Signer,
  MemoryMandateStore,
} from '@mandate/mandates/testing';
import { verifyBundle } from 'mandate-evidence';
import {
  EVERY_LOGGED_CHECK_PASSED,
  EVERY_LOGGED_UNPINNED_CHECK_PASSED,
  EVERY_UNPINNED_CHECK_PASSED,
} from '../../packages/evidence-cli/test/checks';
import {
  createApp,
  type AuditService,
  EVIDENCE_JWS_TYP,
  type EvidenceMandate,
  exportEvidence,
  type EvidenceSink,
  HttpMandatesSource,
  type MandatesSource,
  MemoryEventStore,
  buildAuditEvent,
} from '@mandate/audit/testing';
import { contract } from '@mandate/audit';

const logger = createLogger('audit-test', 'silent');

const mandateBody = {
  principal: { id: 'user_alice', type: 'person' },
  delegate: { id: 'agent_42', type: 'agent' },
  scope: { actions: ['payments:*'], constraints: { max_amount: 50000, currency: 'EUR' } },
};

/** A signer that signs with `active` and publishes `also` too: what a KMS rotation looks like from outside. */
function rotated(active: LocalSigner, ...also: LocalSigner[]): Signer {
  return {
    alg: 'ES256',
    kid: active.kid,
    sign: (payload, options) => active.sign(payload, options),
    publicJwks: async () => [
      ...(await active.publicJwks()),
      ...(await Promise.all(also.map((s) => s.publicJwks()))).flat(),
    ],
  };
}
const brokenSigner = (kid: string): Signer => ({
  alg: 'ES256',
  kid,
  sign: async () => {
    throw new Error('KMS unreachable');
  },
  publicJwks: async () => [],
});

/**
 * The audit service and a real mandates service in-process, sharing one in-process bus, so the
 * mandates service's own events reach the audit store as they would over RabbitMQ.
 */
describe('GET /v1/mandates/:id/evidence', () => {
  let bus: InProcessBus;
  let mandateStore: MemoryMandateStore;
  let oldSigner: LocalSigner;
  let newSigner: LocalSigner;
  const stops: (() => Promise<void>)[] = [];
  let mandatesUrl: string;
  let audit: AuditService;
  let auditServer: RunningServer;
  let eventStore: MemoryEventStore;
  let auditMandates: HttpMandatesSource;

  async function startMandates(signer: Signer): Promise<string> {
    const app = createMandates({
      store: mandateStore,
      publisher: bus,
      signer,
      tokens: testTokens,
      logger,
      clock: systemClock,
    });
    const server = await app.start(0);
    stops.push(() => app.stop());
    return server.url;
  }
  async function startAudit(
    mandates: MandatesSource | undefined,
  ): Promise<{ url: string; store: MemoryEventStore }> {
    const store = new MemoryEventStore();
    const source = new InProcessBus(logger);
    const app = createApp({ store, source, tokens: testTokens, logger, mandates });
    const server = await app.start();
    stops.push(async () => {
      await app.stop();
      await mandates?.close();
      await source.close();
    });
    return { url: server.url, store };
  }

  beforeAll(async () => {
    bus = new InProcessBus(logger);
    mandateStore = new MemoryMandateStore();
    oldSigner = await LocalSigner.create();
    newSigner = await LocalSigner.create();
    mandatesUrl = await startMandates(newSigner);
    eventStore = new MemoryEventStore();
    auditMandates = new HttpMandatesSource({ baseUrls: [mandatesUrl], logger });
    audit = createApp({
      store: eventStore,
      source: bus,
      tokens: testTokens,
      logger,
      mandates: auditMandates,
    });
    auditServer = await audit.start();
  });
  afterAll(async () => {
    await audit.stop();
    await auditMandates.close();
    for (const stop of stops.reverse()) await stop();
    await bus.close();
  });

  const as = (tenant: string) => ({ caller: callerFor(tenant, { requestId: newId('req') }) });
  async function createMandate(tenant: string, url = mandatesUrl) {
    const res = await callService(url, 'POST', '/v1/mandates', { ...as(tenant), body: mandateBody });
    expect(res.status).toBe(201);
    return res.body;
  }
  /** What verify publishes for a decision; verify itself is not running here. */
  async function verification(tenant: string, mandateId: string, decision = 'ALLOW') {
    await bus.publish([
      anyEvent({
        type: 'VERIFICATION_PERFORMED',
        tenantId: tenant,
        resource: { type: 'mandate', id: mandateId },
        data: { decision, reason: decision === 'ALLOW' ? 'OK' : 'MANDATE_SUSPENDED' },
        caller: callerFor(tenant),
      }),
    ]);
  }
  const exportOf = (tenant: string, id: string, url = auditServer.url) =>
    callService(url, 'GET', `/v1/mandates/${id}/evidence`, as(tenant));

  it('when a mandate has lifecycle events and verifications, then the bundle holds them all oldest first and every check passes', async () => {
    const tenant = newId('tnt');
    const mandate = await createMandate(tenant);
    await verification(tenant, mandate.id);
    const suspended = await callService(mandatesUrl, 'POST', `/v1/mandates/${mandate.id}/suspend`, {
      ...as(tenant),
      body: { reason: 'card lost' },
    });
    expect(suspended.status).toBe(200);
    await verification(tenant, mandate.id, 'DENY');
    // Noise: another mandate of the same tenant, and another tenant's event.
    await verification(tenant, (await createMandate(tenant)).id);
    await bus.publish([buildAuditEvent(newId('tnt'), { resource: { type: 'mandate', id: mandate.id } })]);
    await bus.drain();

    const res = await exportOf(tenant, mandate.id);
    expect(res.status).toBe(200);
    const bundle = res.body;
    // Exactly the contract's members, in its order (the checker and the dashboard hold bundles to
    // the same list), but `proofs`: only bundles exported before log_proof carry it.
    expect(Object.keys(bundle)).toEqual(EVIDENCE_BUNDLE_MEMBERS.filter((m) => m !== 'proofs'));
    expect(bundle.evidence_exports).toBe(0);
    expect(bundle.mandate).toEqual(suspended.body);
    expect(bundle.events.map((e: AuditEvent) => e.type)).toEqual([
      'MANDATE_CREATED',
      'VERIFICATION_PERFORMED',
      'MANDATE_SUSPENDED',
      'VERIFICATION_PERFORMED',
    ]);
    expect(
      bundle.events.every((e: AuditEvent) => e.tenant_id === tenant && e.resource?.id === mandate.id),
    ).toBe(true);
    expect(bundle.keys).toEqual(await newSigner.publicJwks());
    expect(bundle.exported_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    // The digest, as the README defines it: canonical header, one line per event, canonical trailer.
    const { mandate: m, events, exported_at } = bundle;
    const lines = [
      canonicalJson({ mandate: m, exported_at }),
      ...events.map((e: AuditEvent) => canonicalJson(e)),
    ];
    expect(bundle.digest).toBe(sha256Hex(lines.map((l) => l + '\n').join('') + '{"evidence_exports":0}'));
    // The signature: a JWS over the digest by the mandates service's key, checkable with jose against its JWKS.
    const jwks = (await callService(mandatesUrl, 'GET', '/v1/.well-known/jwks.json')).body as { keys: JWK[] };
    const { payload, protectedHeader } = await compactVerify(bundle.signature, createLocalJWKSet(jwks), {
      algorithms: ['ES256'],
    });
    expect(new TextDecoder().decode(payload)).toBe(bundle.digest);
    expect(protectedHeader).toEqual({ alg: 'ES256', kid: newSigner.kid, typ: EVIDENCE_JWS_TYP });

    // And the offline checker agrees, against the published keys.
    expect((await verifyBundle(bundle, { trustedKeys: jwks.keys })).map((r) => [r.check, r.ok])).toEqual(
      EVERY_LOGGED_CHECK_PASSED,
    );
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('when a bundle is exported, then EVIDENCE_EXPORTED is recorded with the caller, and the next export counts it without listing it', async () => {
    const tenant = newId('tnt');
    const mandate = await createMandate(tenant);
    await bus.drain();
    const caller = callerFor(tenant, {
      requestId: newId('req'),
      actor: { type: 'api_key', key_id: 'key_01jexporter000000000000000' },
    });
    const first = await callService(auditServer.url, 'GET', `/v1/mandates/${mandate.id}/evidence`, {
      caller,
    });
    expect(first.status).toBe(200);

    const listed = await callService(
      auditServer.url,
      'GET',
      `/v1/events?resource_id=${mandate.id}&type=EVIDENCE_EXPORTED`,
      as(tenant),
    );
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0]).toMatchObject({
      tenant_id: tenant,
      type: 'EVIDENCE_EXPORTED',
      actor: { type: 'api_key', key_id: 'key_01jexporter000000000000000' },
      request_id: caller.requestId,
      resource: { type: 'mandate', id: mandate.id },
      data: {
        digest: first.body.digest,
        exported_at: first.body.exported_at,
        event_count: 1,
        evidence_exports: 0,
        kids: [newSigner.kid],
      },
    });

    const second = await exportOf(tenant, mandate.id);
    expect(second.body.events.map((e: AuditEvent) => e.type)).toEqual(['MANDATE_CREATED']);
    expect(second.body.evidence_exports).toBe(1);
    expect(second.body.digest).not.toBe(first.body.digest);
    expect((await verifyBundle(second.body)).map((r) => [r.check, r.ok])).toEqual(
      EVERY_LOGGED_UNPINNED_CHECK_PASSED,
    );
  });

  it("when another tenant's mandate or an unknown id is asked for, then 404 NOT_FOUND, and nothing is recorded", async () => {
    const owner = newId('tnt');
    const intruder = newId('tnt');
    const mandate = await createMandate(owner);
    const other = await exportOf(intruder, mandate.id);
    expect(other).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', message: 'Mandate not found' } });
    const absent = await exportOf(owner, newId('mdt'));
    expect(absent.body).toEqual(other.body);
    const events = await callService(
      auditServer.url,
      'GET',
      '/v1/events?type=EVIDENCE_EXPORTED',
      as(intruder),
    );
    expect(events.body.data).toEqual([]);
  });

  it('when the mandate was signed before a key rotation, then the bundle carries both keys and verifies', async () => {
    const tenant = newId('tnt');
    const beforeUrl = await startMandates(oldSigner);
    const mandate = await createMandate(tenant, beforeUrl);
    const afterUrl = await startMandates(rotated(newSigner, oldSigner));
    const { url } = await startAudit(new HttpMandatesSource({ baseUrls: [afterUrl], logger }));

    const res = await exportOf(tenant, mandate.id, url);
    expect(res.status).toBe(200);
    expect(res.body.mandate.signature.kid).toBe(oldSigner.kid);
    expect(decodeProtectedHeader(res.body.signature).kid).toBe(newSigner.kid);
    expect(res.body.keys.map((k: JWK) => k.kid)).toEqual([newSigner.kid, oldSigner.kid]);
    expect((await verifyBundle(res.body)).map((r) => [r.check, r.ok])).toEqual(EVERY_UNPINNED_CHECK_PASSED);
  });

  it('when the signing key is unavailable, then 503 and no EVIDENCE_EXPORTED', async () => {
    const tenant = newId('tnt');
    const mandate = await createMandate(tenant);
    const brokenUrl = await startMandates(brokenSigner(newSigner.kid));
    const { url, store } = await startAudit(new HttpMandatesSource({ baseUrls: [brokenUrl], logger }));
    const res = await exportOf(tenant, mandate.id, url);
    expect(res).toMatchObject({ status: 503, body: { error: 'SERVICE_UNAVAILABLE' } });
    expect(await store.listByResource(tenant, mandate.id, 10)).toEqual([]);
  });

  it('when the events change between the hashing pass and the writing pass, then the connection is cut and nothing is recorded', async () => {
    const tenant = newId('tnt');
    const mandate = await createMandate(tenant);
    const { url, store } = await startAudit(new HttpMandatesSource({ baseUrls: [mandatesUrl], logger }));
    const about = { type: 'mandate', id: mandate.id };
    await store.insertMany([buildAuditEvent(tenant, { resource: about })]);
    // The second walk sees an event with an older id that the first did not (a late delivery).
    let walks = 0;
    const read = store.readByResource.bind(store);
    store.readByResource = (t, r) => {
      walks++;
      if (walks === 2) {
        const late = buildAuditEvent(tenant, { resource: about });
        return (async function* () {
          yield { ...late, id: 'evt_00000000000000000000000000' };
          yield* read(t, r);
        })();
      }
      return read(t, r);
    };
    // The cut may come before or after the 200 headers reach the client; either way no body completes.
    const body = fetch(`${url}/v1/mandates/${mandate.id}/evidence`, {
      headers: { 'x-internal-token': await testTokens.mint(callerFor(tenant), 'audit') },
    }).then((res) => res.text());
    await expect(body).rejects.toThrow();
    expect(walks).toBe(2);
    const types: string[] = [];
    for await (const e of read(tenant, mandate.id)) types.push(e.type);
    expect(types).not.toContain('EVIDENCE_EXPORTED');
  });

  it('when the mandates service is unreachable or not configured, then 503', async () => {
    const tenant = newId('tnt');
    const down = await startAudit(
      new HttpMandatesSource({ baseUrls: ['http://127.0.0.1:9'], logger, timeoutMs: 2_000 }),
    );
    expect((await exportOf(tenant, newId('mdt'), down.url)).body).toEqual({
      error: 'SERVICE_UNAVAILABLE',
      message: 'Mandates service unavailable (mandate)',
    });
    const unconfigured = await startAudit(undefined);
    expect((await exportOf(tenant, newId('mdt'), unconfigured.url)).body).toEqual({
      error: 'SERVICE_UNAVAILABLE',
      message: 'Evidence export is not configured (MANDATES_URL)',
    });
  });

  it('when called without an internal token, then 401; with POST, 405', async () => {
    const id = newId('mdt');
    expect(
      (await callService(auditServer.url, 'GET', `/v1/mandates/${id}/evidence`, { caller: null })).status,
    ).toBe(401);
    expect(
      (await callService(auditServer.url, 'POST', `/v1/mandates/${id}/evidence`, as(newId('tnt')))).status,
    ).toBe(405);
  });

  it('when the public OpenAPI document is assembled, then the evidence path is in it', () => {
    const doc = buildOpenApiDocument(contract) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toContain('/v1/mandates/{id}/evidence');
  });
});

describe('exportEvidence (the use case, with a fake mandates service)', () => {
  const tenant = 'tnt_fake';
  const ctx = { tenantId: tenant, internalToken: 'token' };
  const mandate: EvidenceMandate = {
    id: 'mdt_1',
    tenant_id: tenant,
    signature: { alg: 'ES256', kid: 'A', jws: 'x.y.z' },
  };
  const jwk = (kid: string) => ({ kty: 'EC', crv: 'P-256', x: kid, y: kid, kid });
  const fixedClock = { now: () => new Date('2026-11-21T12:00:00.000Z') };

  function fake(jwksAnswers: ReturnType<typeof jwk>[][], kid: string): MandatesSource & { signed: string[] } {
    const signed: string[] = [];
    let call = 0;
    return {
      signed,
      getMandate: async () => mandate,
      publicKeys: async () => jwksAnswers[Math.min(call++, jwksAnswers.length - 1)]!,
      signDigest: async (_ctx, digest) => {
        signed.push(digest);
        const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid })).toString('base64url');
        return { kid, jws: `${header}.${Buffer.from(digest).toString('base64url')}.sig` };
      },
      close: async () => undefined,
    };
  }

  /** Collects what the export writes, and how many writes it took. */
  function collector(): EvidenceSink & { text: () => string; writes: number } {
    const chunks: string[] = [];
    return {
      writes: 0,
      async write(chunk) {
        this.writes++;
        chunks.push(chunk);
      },
      text: () => chunks.join(''),
    };
  }
  const about = (type: AuditEvent['type'] = 'VERIFICATION_PERFORMED') =>
    buildAuditEvent(tenant, { type, resource: { type: 'mandate', id: 'mdt_1' } });

  it('when the key rotates between signing and reading the JWKS, then the JWKS is read once more and the new key is in the bundle', async () => {
    const mandates = fake([[jwk('A')], [jwk('B'), jwk('A')]], 'B');
    const sink = collector();
    const summary = await exportEvidence(
      { store: new MemoryEventStore(), mandates, clock: fixedClock },
      ctx,
      'mdt_1',
      sink,
    );
    const bundle = JSON.parse(sink.text());
    expect(bundle.keys.map((k: JWK) => k.kid)).toEqual(['B', 'A']);
    expect(summary.kids).toEqual(['B', 'A']);
    expect(mandates.signed).toHaveLength(1);
    expect(bundle.digest).toBe(evidenceDigestOf(bundle));
  });

  it('when the signing kid never appears in the JWKS, then 503 before a byte is written', async () => {
    const mandates = fake([[jwk('A')]], 'C');
    const sink = collector();
    await expect(
      exportEvidence({ store: new MemoryEventStore(), mandates, clock: fixedClock }, ctx, 'mdt_1', sink),
    ).rejects.toMatchObject({ status: 503 });
    expect(sink.writes).toBe(0);
  });

  it('when the mandate has 25,000 events, far past the old 10,000 cap, then the bundle holds every one, in many writes, and its digest checks', async () => {
    const store = new MemoryEventStore();
    const events = Array.from({ length: 25_000 }, () => about());
    await store.insertMany(events);
    await store.insertMany([about('EVIDENCE_EXPORTED'), about('EVIDENCE_EXPORTED')]);
    const sink = collector();
    const summary = await exportEvidence(
      { store, mandates: fake([[jwk('A')]], 'A'), clock: fixedClock },
      ctx,
      'mdt_1',
      sink,
    );
    const bundle = JSON.parse(sink.text());
    expect(bundle.events.map((e: AuditEvent) => e.id)).toEqual(events.map((e) => e.id));
    expect(bundle.evidence_exports).toBe(2);
    expect(summary).toMatchObject({ event_count: 25_000, evidence_exports: 2, digest: bundle.digest });
    expect(bundle.digest).toBe(evidenceDigestOf(bundle));
    // Streamed: written in many bounded pieces, never as one string.
    expect(sink.writes).toBeGreaterThan(20);
  });

  it('when an event arrives while the bundle is being written, then the bundle holds what was hashed and signed, and the digest matches', async () => {
    const store = new MemoryEventStore();
    await store.insertMany([about(), about()]);
    const sink = collector();
    let added = false;
    const mandates = fake([[jwk('A')]], 'A');
    const signDigest = mandates.signDigest.bind(mandates);
    // Between the signature and the writing pass: a later export's event and a verification land.
    mandates.signDigest = async (c, digest) => {
      const signed = await signDigest(c, digest);
      if (!added) await store.insertMany([about('EVIDENCE_EXPORTED'), about()]);
      added = true;
      return signed;
    };
    await exportEvidence({ store, mandates, clock: fixedClock }, ctx, 'mdt_1', sink);
    const bundle = JSON.parse(sink.text());
    expect(bundle.events).toHaveLength(2);
    expect(bundle.evidence_exports).toBe(0);
    expect(bundle.digest).toBe(evidenceDigestOf(bundle));
    expect(bundle.digest).toBe(mandates.signed[0]);
  });
});
