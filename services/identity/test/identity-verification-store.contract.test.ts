import { newId } from '@mandate/shared/core';
import { anyEvent, describeStoreContract } from '@mandate/shared/testing';
import type { Answer, IdentityVerification } from '../src/identity-verifications/identity-verification';
import type { IdentityStore } from '../src/store/identity-store';
import { identityStoreAdapters } from './helpers';

function buildSession(overrides: Partial<IdentityVerification> = {}): IdentityVerification {
  const now = Date.now();
  return {
    id: newId('idv'),
    tenant_id: newId('tnt'),
    purpose: 'mandate',
    status: 'PENDING',
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + 300_000).toISOString(),
    nonce: 'n'.repeat(43),
    state: 's'.repeat(43),
    client_id: 'x509_san_dns:localhost',
    request_object: 'a.b.c',
    request_served_at: null,
    poll_token_hash: null,
    answered_at: null,
    reason: null,
    result: null,
    consumed_by: null,
    consumed_at: null,
    ...overrides,
  };
}

const verified = (at = new Date()): Answer => ({
  status: 'VERIFIED',
  answered_at: at.toISOString(),
  result: {
    assurance: 'HIGH',
    issuer: 'https://pid.example',
    subject_id: 'wallet:abc',
    claims_digest: 'f'.repeat(64),
    claims: { family_name: 'Doe', given_name: 'Jane', birth_date: '1990-01-01' },
    verified_at: at.toISOString(),
  },
});

const failedEvent = (s: IdentityVerification) =>
  anyEvent({
    type: 'IDENTITY_VERIFICATION_FAILED',
    tenantId: s.tenant_id,
    resource: { type: 'identity_verification', id: s.id },
    data: { verification_id: s.id, reason: 'NONCE_MISMATCH' },
  });

describeStoreContract<IdentityStore>('IdentityVerificationStore', identityStoreAdapters(), (getStore) => {
  const store = () => getStore().identityVerifications;

  it('when a session is inserted, then it is read back by tenant and id, and by id alone; not by another tenant', async () => {
    const s = buildSession();
    await store().insert(s);
    expect(await store().get(s.tenant_id, s.id)).toEqual(s);
    expect(await store().getById(s.id)).toEqual(s);
    expect(await store().get(newId('tnt'), s.id)).toBeNull();
  });

  it('when the request object is served, then once only (concurrent fetches included), never once expired or answered', async () => {
    const s = buildSession();
    await store().insert(s);
    const at = new Date().toISOString();
    const served = await Promise.all(Array.from({ length: 4 }, () => store().serveRequestObject(s.id, at)));
    expect(served.filter((r) => r !== null)).toEqual([{ ...s, request_served_at: at }]);
    expect(await store().getById(s.id)).toEqual({ ...s, request_served_at: at });

    const expired = buildSession();
    await store().insert(expired);
    expect(await store().serveRequestObject(expired.id, expired.expires_at)).toBeNull();
    const answered = buildSession();
    await store().insert(answered);
    await store().answer(answered.id, verified());
    expect(await store().serveRequestObject(answered.id, new Date().toISOString())).toBeNull();
    expect(await store().serveRequestObject(newId('idv'), new Date().toISOString())).toBeNull();
  });

  it('when answers race on one PENDING session, then exactly one guarded write passes and its events are stored once', async () => {
    const s = buildSession();
    await store().insert(s);
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        store().answer(
          s.id,
          i % 2
            ? verified()
            : { status: 'FAILED', reason: 'NONCE_MISMATCH', answered_at: new Date().toISOString() },
          [failedEvent(s)],
        ),
      ),
    );
    expect(results.filter((r) => r !== null)).toHaveLength(1);
    const pending = (await getStore().pendingEvents(1000)).filter((e) => e.resource?.id === s.id);
    expect(pending).toHaveLength(1);
    // Settled: a later answer changes nothing.
    expect(await store().answer(s.id, verified())).toBeNull();
  });

  it('when a VERIFIED session is consumed concurrently, then one consumer wins; a FAILED one, another purpose or an old one is never consumed', async () => {
    const s = buildSession();
    await store().insert(s);
    await store().answer(s.id, verified());
    const use = (by: string) =>
      store().consume(s.tenant_id, s.id, {
        by,
        at: new Date().toISOString(),
        purpose: 'mandate',
        verifiedAtOrAfter: new Date(Date.now() - 600_000).toISOString(),
      });
    const results = await Promise.all([use('mdt_a'), use('mdt_b'), use('mdt_c')]);
    const winners = results.filter((r) => r !== null);
    expect(winners).toHaveLength(1);
    expect((await store().get(s.tenant_id, s.id))?.consumed_by).toBe(winners[0]!.consumed_by);

    const failed = buildSession();
    await store().insert(failed);
    await store().answer(failed.id, {
      status: 'FAILED',
      reason: 'BAD_SIGNATURE',
      answered_at: new Date().toISOString(),
    });
    const args = (verifiedAtOrAfter: string, purpose: 'mandate' | 'sign_in' = 'mandate') => ({
      by: 'mdt_x',
      at: new Date().toISOString(),
      purpose,
      verifiedAtOrAfter,
    });
    expect(await store().consume(failed.tenant_id, failed.id, args(new Date(0).toISOString()))).toBeNull();

    const other = buildSession();
    await store().insert(other);
    await store().answer(other.id, verified(new Date(Date.now() - 700_000)));
    expect(
      await store().consume(other.tenant_id, other.id, args(new Date(Date.now() - 600_000).toISOString())),
    ).toBeNull();
    expect(
      await store().consume(other.tenant_id, other.id, args(new Date(0).toISOString(), 'sign_in')),
    ).toBeNull();
    expect(await store().consume(newId('tnt'), other.id, args(new Date(0).toISOString()))).toBeNull();
    expect(await store().consume(other.tenant_id, other.id, args(new Date(0).toISOString()))).not.toBeNull();
  });

  it("when sessions are listed, then the tenant's only, newest first, by status and/or purpose, paged by id", async () => {
    const tenantId = newId('tnt');
    const a = buildSession({ tenant_id: tenantId });
    const b = buildSession({ tenant_id: tenantId, purpose: 'sign_in' });
    const c = buildSession({ tenant_id: tenantId });
    for (const s of [a, b, c]) await store().insert(s);
    await store().insert(buildSession());
    expect(await store().answer(c.id, verified())).not.toBeNull();
    const ids = async (options: Parameters<IdentityStore['identityVerifications']['list']>[1]) =>
      (await store().list(tenantId, options)).map((s) => s.id);
    expect(await ids({ limit: 10 })).toEqual([c.id, b.id, a.id]);
    expect(await ids({ limit: 10, status: 'VERIFIED' })).toEqual([c.id]);
    expect(await ids({ limit: 10, purpose: 'mandate' })).toEqual([c.id, a.id]);
    expect(await ids({ limit: 10, status: 'PENDING', purpose: 'mandate' })).toEqual([a.id]);
    expect(await ids({ limit: 1, before: c.id })).toEqual([b.id]);
    expect((await store().list(tenantId, { limit: 1 }))[0]).toEqual(await store().get(tenantId, c.id));
    expect(await store().list(newId('tnt'), { limit: 10 })).toEqual([]);
  });
});
