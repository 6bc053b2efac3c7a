/**
 * `npm run bench:offline-verify` (tsx bench/offline-verify.ts) — offline verification (docs/VERIFY-AT-THE-EDGE.md).
 *
 * 1. Decisions per second on one core: `OfflineVerifier.verify` in this process, with the JWKS and the
 *    status list already cached (a real mandates app in-process signed the mandates and the list), over
 *    BENCH_MANDATES (default 100) mandates and a mix of requests; p50/p99 per decision from the
 *    per-call times of a second pass. Goal: ≥ 100,000 decisions/s.
 * 2. Status-list fetches per second through the gateway (the five-process stack), each with the current
 *    ETag in If-None-Match, so every answer is a 304: BENCH_DURATION s (default 10), BENCH_CONNECTIONS
 *    (default 16) connections (autocannon, same machine).
 */
import autocannon from 'autocannon';
import { systemClock } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { CapturingPublisher, callService, callerFor, testTokens } from '@mandate/shared/testing';
import { OfflineVerifier, type OfflineRequest } from '@mandate/verifier';
import { createApp as createMandates, LocalSigner, MemoryMandateStore } from '@mandate/mandates/testing';
import { apiClient, createTenant, startStack } from '../test/support/stack';

const MANDATES = Number(process.env.BENCH_MANDATES ?? 100);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const DECISIONS = Number(process.env.BENCH_DECISIONS ?? 1_000_000);

/**
 * BENCH_MANDATES mandates signed by a real mandates app in this process (one in ten suspended), its
 * status list, and a verifier that trusts its key. `stop` stops the app.
 */
async function signedMandates(): Promise<{
  jwsList: string[];
  statusList: string;
  verifier: OfflineVerifier;
  stop(): Promise<void>;
}> {
  const signer = await LocalSigner.create();
  const mandates = createMandates({
    store: new MemoryMandateStore(),
    publisher: new CapturingPublisher(),
    signer,
    tokens: testTokens,
    logger: createLogger('bench', 'silent'),
    clock: systemClock,
  });
  const server = await mandates.start(0);
  const jwsList: string[] = [];
  let listPath = '';
  for (let i = 0; i < MANDATES; i++) {
    const res = await callService(server.url, 'POST', '/v1/mandates', {
      caller: callerFor('tnt_bench'),
      body: {
        principal: `p${i}`,
        delegate: 'bot',
        scope: { actions: ['payments:*'], constraints: { max_amount: 5_000, currency: 'EUR' } },
      },
    });
    jwsList.push(res.body.signature.jws);
    listPath = new URL(res.body.status.status_list.uri).pathname;
    if (i % 10 === 0)
      await callService(server.url, 'POST', `/v1/mandates/${res.body.id}/suspend`, {
        caller: callerFor('tnt_bench'),
      });
  }
  const statusList = (await callService(server.url, 'GET', listPath, { caller: callerFor(null) }))
    .body as string;
  const verifier = new OfflineVerifier({ jwks: { keys: await signer.publicJwks() } });
  return { jwsList, statusList, verifier, stop: () => mandates.stop() };
}

async function decisions(): Promise<void> {
  const { jwsList, statusList, verifier, stop } = await signedMandates();
  const requests: OfflineRequest[] = [
    { action: 'payments:create', amount: 1_200, currency: 'EUR' },
    { action: 'payments:create', amount: 9_000, currency: 'EUR' },
    { action: 'refunds:create' },
  ];
  const now = new Date();
  // Warm-up: every JWS and the list verified once (then cached), JIT warmed.
  for (let i = 0; i < 50_000; i++)
    await verifier.verify({
      jws: jwsList[i % MANDATES]!,
      request: requests[i % 3]!,
      statusList,
      now,
      tenant_id: 'tnt_bench',
    });

  const allowed = { ALLOW: 0, DENY: 0 };
  const started = process.hrtime.bigint();
  for (let i = 0; i < DECISIONS; i++) {
    const d = await verifier.verify({
      jws: jwsList[i % MANDATES]!,
      request: requests[i % 3]!,
      statusList,
      now,
      tenant_id: 'tnt_bench',
    });
    allowed[d.decision]++;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;

  const samples = new Float64Array(Math.min(DECISIONS, 200_000));
  for (let i = 0; i < samples.length; i++) {
    const t0 = process.hrtime.bigint();
    await verifier.verify({
      jws: jwsList[i % MANDATES]!,
      request: requests[i % 3]!,
      statusList,
      now,
      tenant_id: 'tnt_bench',
    });
    samples[i] = Number(process.hrtime.bigint() - t0) / 1e3;
  }
  samples.sort();
  const pct = (p: number) =>
    samples[Math.min(samples.length - 1, Math.floor(samples.length * p))]!.toFixed(2);
  console.log(
    JSON.stringify({
      bench: 'offline decisions (cached JWKS and list, one core)',
      decisions: DECISIONS,
      decisions_per_second: Math.round(DECISIONS / seconds),
      p50_us: pct(0.5),
      p99_us: pct(0.99),
      max_us: samples[samples.length - 1]!.toFixed(2),
      allow: allowed.ALLOW,
      deny: allowed.DENY,
    }),
  );
  await stop();
}

/** The per-IP bucket of the public reads (50/s) lifted: this measures serving the list, not the limit. */
const UNLIMITED_PUBLIC_READS = JSON.stringify({ public_reads: { rate: 1_000_000, burst: 1_000_000 } });

async function listFetches(): Promise<void> {
  const stack = await startStack({ gateway: { PLAN_OVERRIDES: UNLIMITED_PUBLIC_READS } });
  try {
    const { auth } = await createTenant(stack, { name: 'bench-status-lists', plan: 'enterprise' });
    const created = await apiClient(stack.gateway.url)('POST', '/v1/mandates', {
      auth,
      body: { principal: 'p', delegate: 'd' },
    });
    const url = stack.gateway.url + new URL(created.body.status.status_list.uri).pathname;
    const first = await fetch(url);
    const etag = first.headers.get('etag')!;
    const r = await autocannon({
      url,
      connections: CONNECTIONS,
      duration: DURATION,
      requests: [{ method: 'GET', headers: { 'if-none-match': etag } }],
    });
    // autocannon counts every non-2xx (a 304 here) in non2xx; the 304s are checked once below.
    const check = await fetch(url, { headers: { 'if-none-match': etag } });
    console.log(
      JSON.stringify({
        bench: 'status-list fetches through the gateway with If-None-Match',
        requests_per_second: Math.round(r.requests.average),
        p50_ms: r.latency.p50,
        p99_ms: r.latency.p99,
        answers_not_2xx: r.non2xx,
        sample_status: check.status,
        errors: r.errors + r.timeouts,
      }),
    );
  } finally {
    await stack.stop();
  }
}

async function main() {
  await decisions();
  if (process.env.BENCH_ONLY !== 'decisions') await listFetches();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
