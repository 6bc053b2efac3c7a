import { apiClient, createTenant, startStack, verifyCounters, type Stack } from '../support/stack';

/**
 * Issue 5 end to end: two verify processes behind one gateway (VERIFY_URL lists both), snapshots
 * in the real Redis, events on the real RabbitMQ. Lifecycle calls and verifies go through the
 * gateway as a client would send them.
 */
describe('end to end: verify scaled to two processes', () => {
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    stack = await startStack({}, { replicas: { verify: 2 } });
    api = apiClient(stack.gateway.url);
  }, 90_000);
  afterAll(async () => {
    await stack?.stop();
  }, 30_000);

  const tenantWithMandate = async () => {
    const { auth, tenant } = await createTenant(stack, { name: 'Scale', plan: 'enterprise' });
    const m = await api('POST', '/v1/mandates', {
      auth,
      body: { principal: 'user_alice', delegate: 'agent_bob', scope: { actions: ['payments:*'] } },
    });
    expect(m.status).toBe(201);
    return { auth, mandateId: m.body.id as string, tenantId: tenant.id };
  };

  const metricsOf = (url: string) => verifyCounters(stack.internalSecret, url, 'req_metrics');

  it('when verifies go through the gateway, then both verify processes answer them and a warm snapshot costs no mandates read', async () => {
    const { auth, mandateId } = await tenantWithMandate();
    const before = await Promise.all(stack.replicas.verify.map((v) => metricsOf(v.url)));
    const answers = [];
    for (let i = 0; i < 40; i++)
      answers.push(
        await api('POST', '/v1/verify', { auth, body: { mandate_id: mandateId, action: 'payments:create' } }),
      );
    expect(answers.filter((a) => a.status !== 200).map((a) => a.text)).toEqual([]);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    const after = await Promise.all(stack.replicas.verify.map((v) => metricsOf(v.url)));
    const served = after.map((m, i) => m.verifications! - before[i]!.verifications!);
    expect(served.every((n) => n >= 10)).toBe(true);
    expect(served.reduce((a, b) => a + b, 0)).toBe(40);
    // The create wrote the snapshot: neither replica had to ask the mandates service.
    expect(after.map((m, i) => m.mandates_reads! - before[i]!.mandates_reads!)).toEqual([0, 0]);
  }, 60_000);

  it('when verifies run concurrently with lifecycle calls, then none sent after a lifecycle response carries an older mandate_version and none after the revoke is an ALLOW', async () => {
    const { auth, mandateId } = await tenantWithMandate();
    const lifecycle: { at: number; version: number }[] = [];
    const verifies: { at: number; version: number; decision: string }[] = [];
    const statuses = new Map<number, number>();
    let done = false;
    const worker = async () => {
      while (!done) {
        const at = performance.now();
        const res = await api('POST', '/v1/verify', {
          auth,
          body: { mandate_id: mandateId, action: 'payments:create' },
        });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        // A 429 (the gateway's rate limit) answers nothing about the mandate; only decisions are checked.
        if (res.status === 200)
          verifies.push({ at, version: res.body.mandate_version, decision: res.body.decision });
      }
    };
    const workers = Array.from({ length: 8 }, () => worker());
    for (let i = 0; i < 12; i++) {
      const res = await api('POST', `/v1/mandates/${mandateId}/${i % 2 === 0 ? 'suspend' : 'reactivate'}`, {
        auth,
      });
      expect(res.status).toBe(200);
      lifecycle.push({ at: performance.now(), version: res.body.version });
      // Pacing, not waiting: verifies run between one lifecycle change and the next.
      await new Promise((r) => setTimeout(r, 20));
    }
    const revoked = await api('POST', `/v1/mandates/${mandateId}/revoke`, { auth });
    expect(revoked.status).toBe(200);
    const revokedAt = performance.now();
    lifecycle.push({ at: revokedAt, version: revoked.body.version });
    const deadline = Date.now() + 10_000;
    while (verifies.filter((v) => v.at > revokedAt).length < 50 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    done = true;
    await Promise.all(workers);

    const stale = verifies.filter(
      (v) => v.version < lifecycle.filter((l) => l.at < v.at).reduce((max, l) => Math.max(max, l.version), 1),
    );
    const staleAllow = verifies.filter((v) => v.at > revokedAt && v.decision === 'ALLOW');
    expect({ stale: stale.length, staleAllow: staleAllow.length }).toEqual({ stale: 0, staleAllow: 0 });
    expect([...statuses.keys()].filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(verifies.length).toBeGreaterThan(100);
    expect(verifies.filter((v) => v.at > revokedAt).length).toBeGreaterThanOrEqual(50);
    expect(new Set(verifies.map((v) => v.version)).size).toBeGreaterThan(3);
  }, 60_000);
});
