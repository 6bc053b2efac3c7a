import { CompactSign, compactVerify, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { canonicalJson, newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import {
  AUDIT_CHECKPOINT_TYP,
  fromBase64Url,
  merkleHasher,
  toBase64Url,
  type CheckpointClaims,
} from '@mandate/shared/mandate';
import { auditLeafHash } from '../src/store/leaf-hash';
import { InProcessBus, type AuditEvent } from '@mandate/shared/events';
import { buildOpenApiDocument } from '@mandate/shared/contract';
import { type RunningServer } from '@mandate/shared/http';
import { callService, callerFor, testTokens } from '@mandate/shared/testing';
import { eventually } from '../../../test/support/eventually';
import { createApp, type AuditService } from '../src/app';
import { contract } from '../src/contract';
import type { MandatesSource } from '../src/evidence/mandates-source';
import { eventStoreAdapters } from './adapters';
import { buildAuditEvent } from './factories';

const logger = createLogger('audit-log-api-test', 'silent');

/** The mandates service's signer, as far as checkpoints go: an ES256 key, typ audit-checkpoint+jwt. */
async function fakeMandates(): Promise<{ source: MandatesSource; jwk: JWK; signed: CheckpointClaims[] }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'K1' };
  const signed: CheckpointClaims[] = [];
  const source: MandatesSource = {
    getMandate: async () => null,
    publicKeys: async () => [jwk],
    signDigest: async () => {
      throw new Error('not used');
    },
    signCheckpoint: async (ctx, claims) => {
      expect(ctx.tenantId).toBe(claims.tenant_id);
      signed.push(claims);
      const jws = await new CompactSign(new TextEncoder().encode(canonicalJson(claims)))
        .setProtectedHeader({ alg: 'ES256', kid: 'K1', typ: AUDIT_CHECKPOINT_TYP })
        .sign(privateKey);
      return { kid: 'K1', jws };
    },
    close: async () => undefined,
  };
  return { source, jwk, signed };
}

const bytes = (b64: string) => fromBase64Url(b64)!;

describe.each(eventStoreAdapters())('audit log API ($name store)', (adapter) => {
  let bus: InProcessBus;
  let service: AuditService;
  let server: RunningServer;
  let owned: Awaited<ReturnType<typeof adapter.create>>;
  let mandates: Awaited<ReturnType<typeof fakeMandates>>;

  beforeAll(async () => {
    bus = new InProcessBus(logger);
    owned = await adapter.create();
    mandates = await fakeMandates();
    service = createApp({
      store: owned.store,
      source: bus,
      tokens: testTokens,
      logger,
      mandates: mandates.source,
      checkpointSeconds: 1,
    });
    server = await service.start();
  });
  afterAll(async () => {
    await service.stop();
    await bus.close();
    await owned.close();
  });

  const get = (tenant: string | null, path: string) =>
    callService(server.url, 'GET', path, { caller: callerFor(tenant) });

  async function publish(...events: AuditEvent[]): Promise<AuditEvent[]> {
    await bus.publish(events);
    await bus.drain();
    return events;
  }

  /** Waits for the periodic round to sign a checkpoint of exactly this size. */
  const checkpointOf = (tenant: string, size: number) =>
    eventually(
      async () => {
        const res = await get(tenant, '/v1/audit/checkpoints/latest');
        return res.status === 200 && res.body.tree_size === size ? res.body : undefined;
      },
      20_000,
      `a checkpoint of size ${size}`,
    );

  it('when events are stored, then a signed checkpoint of the tenant’s tree follows, and every event proves its inclusion', async () => {
    const tenant = newId('tnt');
    expect((await get(tenant, '/v1/audit/checkpoints/latest')).status).toBe(404);
    const events = await publish(...Array.from({ length: 6 }, () => buildAuditEvent(tenant)));
    const cp = await checkpointOf(tenant, 6);

    // The JWS: ES256 by the JWKS key, typ audit-checkpoint+jwt, payload the canonical claims.
    const key = await importJWK(mandates.jwk, 'ES256');
    const { payload, protectedHeader } = await compactVerify(cp.jws, key);
    expect(protectedHeader).toMatchObject({ alg: 'ES256', kid: 'K1', typ: 'audit-checkpoint+jwt' });
    const claims = { tenant_id: tenant, tree_size: 6, root_hash: cp.root_hash, issued_at: cp.issued_at };
    expect(new TextDecoder().decode(payload)).toBe(canonicalJson(claims));

    for (const event of events) {
      const served = (await get(tenant, `/v1/events/${event.id}`)).body as AuditEvent;
      const res = await get(tenant, `/v1/events/${event.id}/inclusion-proof?tree_size=6`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ seq: served.seq, tree_size: 6 });
      expect(res.body.leaf_hash).toBe(toBase64Url(auditLeafHash(served)));
      const ok = merkleHasher.verifyInclusion(
        served.seq! - 1,
        6,
        bytes(res.body.leaf_hash),
        (res.body.path as string[]).map(bytes),
        bytes(cp.root_hash),
      );
      expect(ok).toBe(true);
    }
    // Another tenant's event is not found; no signing round for an unchanged log.
    expect((await get(newId('tnt'), `/v1/events/${events[0]!.id}/inclusion-proof?tree_size=6`)).status).toBe(
      404,
    );
  });

  it('when the log grows, then a consistency proof links the older checkpoint to the newer, and the list pages them', async () => {
    const tenant = newId('tnt');
    await publish(...Array.from({ length: 3 }, () => buildAuditEvent(tenant)));
    const first = await checkpointOf(tenant, 3);
    await publish(...Array.from({ length: 5 }, () => buildAuditEvent(tenant)));
    const second = await checkpointOf(tenant, 8);

    const res = await get(tenant, '/v1/audit/consistency-proof?from=3&to=8');
    expect(res.status).toBe(200);
    expect(res.body.from).toBe(3);
    const path = (res.body.path as string[]).map(bytes);
    expect(merkleHasher.verifyConsistency(3, 8, bytes(first.root_hash), bytes(second.root_hash), path)).toBe(
      true,
    );

    const page1 = await get(tenant, '/v1/audit/checkpoints?limit=1');
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((c: { tree_size: number }) => c.tree_size)).toEqual([8]);
    expect(page1.body.has_more).toBe(true);
    const page2 = await get(tenant, `/v1/audit/checkpoints?limit=1&cursor=${page1.body.next_cursor}`);
    expect(page2.body).toMatchObject({ data: [{ tree_size: 3 }], has_more: false, next_cursor: null });
  });

  it('when a size is not a signed checkpoint’s, or a query is malformed, then 400 {error, message}', async () => {
    const tenant = newId('tnt');
    const [event] = await publish(buildAuditEvent(tenant), buildAuditEvent(tenant));
    await checkpointOf(tenant, 2);
    for (const path of [
      `/v1/events/${event!.id}/inclusion-proof?tree_size=1`,
      `/v1/events/${event!.id}/inclusion-proof?tree_size=0`,
      `/v1/events/${event!.id}/inclusion-proof?tree_size=x`,
      `/v1/events/${event!.id}/inclusion-proof`,
      `/v1/events/${event!.id}/inclusion-proof?tree_size=2&extra=1`,
      '/v1/audit/consistency-proof?from=1&to=2',
      '/v1/audit/consistency-proof?from=2&to=1',
      '/v1/audit/consistency-proof?from=2',
      '/v1/audit/checkpoints?cursor=nonsense',
    ]) {
      const res = await get(tenant, path);
      expect({ path, status: res.status, keys: Object.keys(res.body).sort() }).toEqual({
        path,
        status: 400,
        keys: ['error', 'message'],
      });
    }
    expect((await get(tenant, '/v1/audit/consistency-proof?from=2&to=2')).body).toEqual({
      from: 2,
      to: 2,
      path: [],
    });
  });

  it('when the OpenAPI document is assembled, then the log routes are in it', () => {
    const doc = buildOpenApiDocument(contract) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/audit/checkpoints',
        '/v1/audit/checkpoints/latest',
        '/v1/events/{id}/inclusion-proof',
        '/v1/audit/consistency-proof',
      ]),
    );
  });
});
