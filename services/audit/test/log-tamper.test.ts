import { CompactSign, exportJWK, generateKeyPair } from 'jose';
import type { Connection } from 'mongoose';
import { canonicalJson, newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { AUDIT_CHECKPOINT_TYP, toBase64Url, type CheckpointClaims } from '@mandate/shared/mandate';
import { type AuditEvent } from '@mandate/shared/events';
import { connectMongo } from '@mandate/shared/data';
import {
  MONGO_TARGET,
  MONGO_URL,
  describeIfAvailable,
  mongoSkipReason,
  testDatabaseName,
} from '@mandate/shared/testing';
import { verifyBundle, type CheckResult } from '../../../packages/evidence-cli/src';
import { checkpointNow, consistencyProof } from '../src/domain/log';
import { auditLeafHash } from '../src/store/leaf-hash';
import type { EvidenceMandate } from '../src/evidence/bundle';
import { exportEvidence } from '../src/evidence/export-evidence';
import type { MandatesSource } from '../src/evidence/mandates-source';
import { MongoEventStore } from '../src/store/mongo-event-store';
import { buildAuditEvent } from './factories';

/**
 * Tampering with the stored events directly in MongoDB (as whoever runs the database could), then
 * exporting and checking offline (docs/API.md#proving-the-log): the checker names the event.
 */
const logger = createLogger('audit-tamper-test', 'silent');
const clock = { now: () => new Date() };

describeIfAvailable(
  !!MONGO_URL,
  `tampering with the stored log (${MONGO_TARGET})`,
  mongoSkipReason ?? '',
  () => {
    let connection: Connection;
    let store: MongoEventStore;
    let mandates: MandatesSource;
    let sign: (claims: CheckpointClaims) => Promise<string>;

    beforeAll(async () => {
      connection = await connectMongo(MONGO_URL!, testDatabaseName('audittamper'), logger);
      store = new MongoEventStore(connection);
      await store.init();
      const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
      const jwk = { ...(await exportJWK(publicKey)), kid: 'K1' };
      const jws = (payload: string, typ: string) =>
        new CompactSign(new TextEncoder().encode(payload))
          .setProtectedHeader({ alg: 'ES256', kid: 'K1', typ })
          .sign(privateKey);
      sign = (claims) => jws(canonicalJson(claims), AUDIT_CHECKPOINT_TYP);
      mandates = {
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
    });
    afterAll(async () => {
      await connection.dropDatabase();
      await connection.close();
    });

    const events = () => connection.collection<{ _id: string; seq?: number }>('events');

    /** A tenant with one mandate's 6 events among 10, checkpointed; answers the mandate's event ids. */
    async function logged(): Promise<{ tenant: string; mandateId: string; ids: string[] }> {
      const tenant = newId('tnt');
      const mandateId = newId('mdt');
      const about = () => buildAuditEvent(tenant, { resource: { type: 'mandate', id: mandateId } });
      const mine = Array.from({ length: 6 }, about);
      await store.insertMany([
        mine[0]!,
        buildAuditEvent(tenant),
        mine[1]!,
        mine[2]!,
        buildAuditEvent(tenant),
      ]);
      await store.insertMany([
        mine[3]!,
        buildAuditEvent(tenant),
        mine[4]!,
        buildAuditEvent(tenant),
        mine[5]!,
      ]);
      await checkpointNow(store, sign, tenant, clock);
      return { tenant, mandateId, ids: mine.map((e) => e.id) };
    }

    async function exported(tenant: string, mandateId: string): Promise<string> {
      let text = '';
      await exportEvidence(
        { store, mandates, clock, signCheckpoint: sign },
        { tenantId: tenant, internalToken: 't' },
        mandateId,
        { write: async (chunk) => void (text += chunk) },
      );
      return text;
    }

    async function check(tenant: string, mandateId: string, options = {}): Promise<Map<string, CheckResult>> {
      const results = await verifyBundle(JSON.parse(await exported(tenant, mandateId)), options);
      return new Map(results.map((r) => [r.check, r]));
    }

    it('when nothing is touched, then the checkpoint and every proof verify', async () => {
      const { tenant, mandateId } = await logged();
      const results = await check(tenant, mandateId);
      expect(results.get('log checkpoint')?.ok).toBe(true);
      expect(results.get('log proofs')).toMatchObject({ ok: true });
    });

    it('when the log is exported, then the bundle proves its events with one log_proof: a leaf hash per event, each shared node once', async () => {
      const { tenant, mandateId } = await logged();
      const bundle = JSON.parse(await exported(tenant, mandateId)) as Record<string, unknown>;
      expect(bundle).not.toHaveProperty('proofs');
      const proof = bundle.log_proof as { leaf_hashes: string[]; nodes: string[] };
      // Seqs 1, 3, 4, 6, 8, 10 of a tree of 10: the gaps 2, 5, 7 and 9 (perfect subtrees of one leaf).
      expect({ leaves: proof.leaf_hashes.length, nodes: proof.nodes.length }).toEqual({
        leaves: 6,
        nodes: 4,
      });
    });

    it('when a stored event is altered and its stored leaf hash too, then the log proof fails naming the checkpoint', async () => {
      const { tenant, mandateId, ids } = await logged();
      await events().updateOne({ _id: ids[2]! }, { $set: { 'data.note': 'forged' } });
      const altered = (await store.get(tenant, ids[2]!))!;
      await connection
        .collection('audit_log_nodes')
        .updateOne(
          { tenant_id: tenant, level: 0, index: altered.seq! - 1 },
          { $set: { hash: toBase64Url(auditLeafHash(altered)) } },
        );
      const proofs = (await check(tenant, mandateId)).get('log proofs')!;
      expect(proofs.ok).toBe(false);
      expect(proofs.detail).toMatch(/does not lead to the root of the checkpoint \(tree_size 10/);
    });

    it('when a stored event is altered, then the checker fails naming it', async () => {
      const { tenant, mandateId, ids } = await logged();
      await events().updateOne({ _id: ids[2]! }, { $set: { 'data.note': 'forged' } });
      const proofs = (await check(tenant, mandateId)).get('log proofs')!;
      expect(proofs.ok).toBe(false);
      expect(proofs.detail).toContain(ids[2]);
    });

    it('when two stored events are reordered (their seqs swapped), then the checker fails naming the first', async () => {
      const { tenant, mandateId, ids } = await logged();
      const [a, b] = [ids[1]!, ids[4]!];
      const seqA = (await events().findOne({ _id: a }))!.seq!;
      const seqB = (await events().findOne({ _id: b }))!.seq!;
      await events().updateOne({ _id: a }, { $set: { seq: 1_000_000 } });
      await events().updateOne({ _id: b }, { $set: { seq: seqA } });
      await events().updateOne({ _id: a }, { $set: { seq: seqB } });
      const proofs = (await check(tenant, mandateId)).get('log proofs')!;
      expect(proofs.ok).toBe(false);
      expect(proofs.detail).toContain(a);
    });

    it('when an event is inserted directly (outside the log), then the checker fails naming it', async () => {
      const { tenant, mandateId } = await logged();
      const forged = buildAuditEvent(tenant, { resource: { type: 'mandate', id: mandateId } });
      await events().insertOne({
        ...(forged as unknown as Omit<AuditEvent, 'id'>),
        _id: forged.id,
        occurred_at: new Date(forged.occurred_at),
      } as never);
      const proofs = (await check(tenant, mandateId)).get('log proofs')!;
      expect(proofs.ok).toBe(false);
      expect(proofs.detail).toContain(forged.id);
    });

    it('when history is rewritten (an event altered and the tree rebuilt), then consistency with a checkpoint kept earlier fails', async () => {
      const { tenant, mandateId, ids } = await logged();
      const kept = (await store.latestCheckpoint(tenant))!;
      await events().updateOne({ _id: ids[0]! }, { $set: { 'data.note': 'rewritten' } });
      await connection.collection('audit_log_nodes').deleteMany({ tenant_id: tenant });
      await store.insert(buildAuditEvent(tenant, { resource: { type: 'mandate', id: mandateId } }));
      const now = (await checkpointNow(store, sign, tenant, clock))!;
      const proof = await consistencyProof(store, tenant, kept.tree_size, now.tree_size);
      const results = await check(tenant, mandateId, { keptCheckpoint: kept, consistency: proof });
      // The rebuilt tree proves its own events, but not that it extends what the auditor kept.
      expect(results.get('log proofs')?.ok).toBe(true);
      expect(results.get('log consistency')).toMatchObject({ ok: false });
      expect(results.get('log consistency')!.detail).toMatch(/rewritten/);
    });
  },
);
