import crypto from 'node:crypto';
import { CompactSign, exportJWK, generateKeyPair } from 'jose';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { canonicalJson, newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import {
  AUDIT_CHECKPOINT_TYP,
  fromBase64Url,
  merkleHasher,
  type CheckpointClaims,
} from '@mandate/shared/mandate';
import { auditLeafHash } from '../src/store/leaf-hash';
import { type AuditEvent } from '@mandate/shared/events';
import { connectMongo } from '@mandate/shared/data';
import { MONGO_TARGET, MONGO_URL, describeIfAvailable, mongoSkipReason } from '@mandate/shared/testing';
import { verifyBundle } from '../../../packages/evidence-cli/src';
import { runBackfill } from '../src/backfill';
import { auditConfig } from '../src/config';
import { checkpointNow, consistencyProof, inclusionProof } from '../src/domain/log';
import type { EvidenceMandate } from '../src/evidence/bundle';
import { exportEvidence } from '../src/evidence/export-evidence';
import type { MandatesSource } from '../src/evidence/mandates-source';
import { MongoEventStore } from '../src/store/mongo-event-store';
import { mongoEventStoreOfSuite } from './adapters';
import { buildAuditEvent } from './factories';

/**
 * The one-time backfill of events stored before the log (docs/OPERATIONS.md, "Events stored before
 * the tamper-evident log"): events written without `seq`, as audit wrote them then, get their seqs
 * in stored order, resumably, and then every proof verifies.
 */
const logger = createLogger('audit-backfill-test', 'silent');

/** The RFC 9162 tree hash, computed independently of the stores. */
const H = (...parts: Uint8Array[]) => crypto.createHash('sha256').update(Buffer.concat(parts)).digest();
function mth(leafHashes: Uint8Array[]): Buffer {
  if (leafHashes.length === 1) return Buffer.from(leafHashes[0]!);
  const k = 2 ** Math.ceil(Math.log2(leafHashes.length) - 1);
  return H(Buffer.from([1]), mth(leafHashes.slice(0, k)), mth(leafHashes.slice(k)));
}
const clock = { now: () => new Date() };

/** The mandates service as the export needs it, over one ES256 key (the checkpoint signer's too). */
async function signing(): Promise<{
  sign: (c: CheckpointClaims) => Promise<string>;
  mandates: MandatesSource;
}> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'K1' };
  const jws = (payload: string, typ: string) =>
    new CompactSign(new TextEncoder().encode(payload))
      .setProtectedHeader({ alg: 'ES256', kid: 'K1', typ })
      .sign(privateKey);
  const mandates: MandatesSource = {
    getMandate: async (ctx, id) =>
      ({
        id,
        tenant_id: ctx.tenantId,
        principal: {},
        delegate: {},
        scope: {},
        valid_from: 'x',
        expires_at: 'x',
        created_at: 'x',
        signature: { alg: 'ES256', kid: 'K1', jws: 'a.b.c' },
      }) as EvidenceMandate,
    publicKeys: async () => [jwk],
    signDigest: async (_ctx, digest) => ({ kid: 'K1', jws: await jws(digest, 'mandate-evidence+jws') }),
    close: async () => undefined,
  };
  return { sign: (claims) => jws(canonicalJson(claims), AUDIT_CHECKPOINT_TYP), mandates };
}

/** An event as audit stored it before the log: the document, with no seq. */
const preLogDoc = (event: AuditEvent) => {
  const { id, seq: _seq, ...rest } = event;
  return { ...rest, _id: id, occurred_at: new Date(event.occurred_at) };
};

describeIfAvailable(
  !!MONGO_URL,
  `backfill of events stored before the log (${MONGO_TARGET})`,
  mongoSkipReason ?? '',
  () => {
    const suite = mongoEventStoreOfSuite('auditbackfill');
    const db = suite.database;

    const events = () =>
      suite.connection.collection<{ _id: string; seq?: number; tenant_id: string | null }>('events');

    it('when events predate the log, then a stopped backfill resumes, numbers them in stored order gap-free, runs again as a no-op, and every proof verifies', async () => {
      const tenant = newId('tnt');
      const other = newId('tnt');
      const mandateId = newId('mdt');
      const about = () => buildAuditEvent(tenant, { resource: { type: 'mandate', id: mandateId } });
      const old = [
        about(),
        buildAuditEvent(tenant),
        about(),
        about(),
        buildAuditEvent(tenant),
        about(),
        about(),
      ];
      const others = [buildAuditEvent(other), buildAuditEvent(other), buildAuditEvent(other)];
      const platform = buildAuditEvent(null, { type: 'ONBOARDING_REQUESTED' });
      // Stored out of id order, as several consumers would have: the backfill goes by id.
      await events().insertMany(
        [...old.slice(3), ...others, platform, ...old.slice(0, 3)].map(preLogDoc) as never,
      );
      expect(await suite.store.logSize(tenant)).toBe(0);

      // A run stopped after its first batch of 2 (a crash, ^C): those 2 have their seqs, the rest not.
      await expect(
        suite.store.backfillLog({
          batchSize: 2,
          onBatch: () => {
            throw new Error('stopped');
          },
        }),
      ).rejects.toThrow('stopped');
      const numbered = await events().countDocuments({ seq: { $exists: true } });
      expect(numbered).toBe(2);

      const lines: string[] = [];
      const reports = await runBackfill(auditConfig({ MONGO_URL: MONGO_URL!, MONGO_DB: db }), logger, (l) =>
        lines.push(l),
      );
      // Tenants in id order: the stopped run had numbered `tenant`'s first two.
      expect(reports).toEqual([
        { tenantId: tenant, assigned: 5, size: 7 },
        { tenantId: other, assigned: 3, size: 3 },
      ]);
      const byId = async (t: string) =>
        (await events().find({ tenant_id: t }).sort({ _id: 1 }).toArray()).map((d) => [d._id, d.seq]);
      expect(await byId(tenant)).toEqual(old.map((e, i) => [e.id, i + 1]));
      expect(await byId(other)).toEqual(others.map((e, i) => [e.id, i + 1]));
      expect((await events().findOne({ _id: platform.id }))?.seq).toBeUndefined();
      expect(await suite.store.logHeads()).toEqual(
        expect.arrayContaining([
          { tenantId: tenant, size: 7 },
          { tenantId: other, size: 3 },
        ]),
      );
      expect(lines.join('\n')).toContain(`${tenant}:`);

      // Idempotent: a second run numbers nothing.
      const again = await suite.store.backfillLog();
      expect(again.find((r) => r.tenantId === tenant)).toEqual({ tenantId: tenant, assigned: 0, size: 7 });

      // The first checkpoint over the backfilled log; every inclusion proof verifies against it.
      const { sign, mandates } = await signing();
      const first = (await checkpointNow(suite.store, sign, tenant, clock))!;
      expect(first.tree_size).toBe(7);
      const root = fromBase64Url(first.root_hash)!;
      for (const event of old) {
        const proof = await inclusionProof(suite.store, tenant, event.id, 7);
        const ok = merkleHasher.verifyInclusion(
          proof.seq - 1,
          proof.tree_size,
          fromBase64Url(proof.leaf_hash)!,
          proof.path.map((p) => fromBase64Url(p)!),
          root,
        );
        expect(ok).toBe(true);
      }

      // New events after the backfill follow it; the later checkpoint is consistent with the first.
      const later = [about(), buildAuditEvent(tenant)];
      await suite.store.insertMany(later);
      expect((await suite.store.get(tenant, later[1]!.id))?.seq).toBe(9);
      const second = (await checkpointNow(suite.store, sign, tenant, clock))!;
      const proof = await consistencyProof(suite.store, tenant, 7, second.tree_size);

      // The mandate's bundle: its checkpoint, every event's proof, and consistency with the first.
      let text = '';
      await exportEvidence(
        { store: suite.store, mandates, clock, signCheckpoint: sign },
        { tenantId: tenant, internalToken: 't' },
        mandateId,
        { write: async (chunk) => void (text += chunk) },
      );
      const results = new Map(
        (await verifyBundle(JSON.parse(text), { keptCheckpoint: first, consistency: proof })).map((r) => [
          r.check,
          r,
        ]),
      );
      expect(results.get('log checkpoint')?.ok).toBe(true);
      expect(results.get('log proofs')).toMatchObject({ ok: true });
      expect(results.get('log consistency')).toMatchObject({ ok: true });
    });

    it('when two backfills run at once while a replica stores new events, then every event gets one seq, 1…n gap-free, and the tree is that of the events', async () => {
      const tenant = newId('tnt');
      const old = Array.from({ length: 30 }, (_, i) => buildAuditEvent(tenant, { data: { i } }));
      await events().insertMany(old.map(preLogDoc) as never);
      const second = await connectMongo(MONGO_URL!, db, logger);
      try {
        const twin = new MongoEventStore(second);
        const racer = new MongoEventStore(second);
        const fresh = Array.from({ length: 5 }, () => buildAuditEvent(tenant));
        await Promise.all([
          suite.store.backfillLog({ batchSize: 3 }),
          twin.backfillLog({ batchSize: 4 }),
          (async () => {
            for (const e of fresh) await racer.insert(e);
          })(),
        ]);
        const docs = await events().find({ tenant_id: tenant }).toArray();
        expect(docs.map((d) => d.seq).sort((a, b) => a! - b!)).toEqual(
          Array.from({ length: 35 }, (_, i) => i + 1),
        );
        const leaves = (await Promise.all(docs.map((d) => suite.store.get(tenant, d._id))))
          .sort((a, b) => a!.seq! - b!.seq!)
          .map((e) => auditLeafHash(e!));
        const [root] = await twin.logHashes(tenant, [[0, 35]]);
        expect(Buffer.from(root!).toString('hex')).toBe(mth(leaves).toString('hex'));
      } finally {
        await second.close();
      }
    });
  },
);

describe('backfill on the journal file (AUDIT_STORE_FILE)', () => {
  it('when the journal predates the log, then reading it back numbers its events in journal order and the backfill has nothing left to number', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'audit-backfill-'));
    try {
      const file = path.join(dir, 'events.ndjson');
      const tenant = newId('tnt');
      const old = [buildAuditEvent(tenant), buildAuditEvent(tenant), buildAuditEvent(null)];
      await writeFile(file, old.map((e) => JSON.stringify(e)).join('\n') + '\n');
      const lines: string[] = [];
      const reports = await runBackfill(auditConfig({ AUDIT_STORE_FILE: file }), logger, (l) =>
        lines.push(l),
      );
      expect(reports).toEqual([{ tenantId: tenant, assigned: 0, size: 2 }]);
      expect(lines[lines.length - 1]).toMatch(/nothing to number/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
