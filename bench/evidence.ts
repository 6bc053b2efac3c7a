/**
 * `npm run bench:evidence` — exports the evidence of one mandate with BENCH_EVENTS (default
 * 100,000) events over HTTP and reports the time and the audit process's memory.
 *
 * Two real service processes on their default (in-process) adapters: mandates (a local signing key,
 * the mandate) and audit, whose in-memory store is loaded from a journal file (AUDIT_STORE_FILE)
 * written here: BENCH_EVENTS VERIFICATION_PERFORMED events about the mandate, plus 1,000 other
 * events of the tenant and 100 earlier EVIDENCE_EXPORTED. The export is called on the audit service
 * itself (with an internal token, as the gateway would; the gateway streams the answer on, see
 * test/e2e/gateway-streaming.test.ts), BENCH_ROUNDS times (default 3). Memory is the audit process's RSS from
 * /proc (Linux): VmHWM after resetting it through clear_refs, else sampled every 10 ms. Each bundle
 * is checked with the offline checker against the service's JWKS.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  INTERNAL_TOKEN_HEADER,
  internalTokens,
  newId,
  type CallerContext,
  type InternalTokens,
} from '@mandate/shared/core';
import { anyEvent } from '@mandate/shared/testing';
import { verifyBundleText } from '../packages/evidence-cli/src/verify';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const root = path.resolve(__dirname, '..');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function startService(
  name: string,
  env: Record<string, string>,
): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(root, `services/${name}/src/main.ts`)],
    {
      env: { PATH: process.env.PATH, LOG_LEVEL: 'error', HOST: '127.0.0.1', PORT: String(port), ...env },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { url, child };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${name} did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

/** VmRSS / VmHWM (peak) of a process, in MiB (Linux /proc). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** Resets VmHWM to the current RSS, so the next peak is this export's (Linux ≥ 4.0; needs our own child). */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

type Caller = () => CallerContext;

/** One mandate in the mandates process, the one every event is about. */
async function createMandate(
  mandatesUrl: string,
  tokens: InternalTokens,
  caller: Caller,
): Promise<{ id: string }> {
  const created = await fetch(`${mandatesUrl}/v1/mandates`, {
    method: 'POST',
    headers: {
      [INTERNAL_TOKEN_HEADER]: await tokens.mint(caller(), 'mandates'),
      'content-type': 'application/json',
    },
    body: JSON.stringify({
      principal: 'user_alice',
      delegate: 'agent_bob',
      scope: { actions: ['payments:*'], constraints: { max_amount: 50_000, currency: 'EUR' } },
    }),
  });
  if (created.status !== 201) throw new Error(`mandate: ${created.status} ${await created.text()}`);
  return (await created.json()) as { id: string };
}

/** The journal the audit process reads back at start: one JSON event per line. */
function writeJournal(journal: string, mandateId: string, tenantId: string, caller: Caller): void {
  const lines: string[] = [];
  const about = { type: 'mandate', id: mandateId };
  const event = (type: 'VERIFICATION_PERFORMED' | 'EVIDENCE_EXPORTED' | 'API_CALL', i: number) =>
    JSON.stringify(
      anyEvent({
        type,
        tenantId,
        resource: type === 'API_CALL' ? null : about,
        data:
          type === 'VERIFICATION_PERFORMED'
            ? {
                input: {
                  mandate_id: mandateId,
                  action: 'payments:create',
                  amount: i % 50_000,
                  currency: 'EUR',
                },
                decision: 'ALLOW',
                reason: 'OK',
                decision_id: `dec_${i.toString(16).padStart(26, '0')}`,
              }
            : { n: i },
        caller: caller(),
      }),
    );
  for (let i = 0; i < EVENTS; i++) lines.push(event('VERIFICATION_PERFORMED', i));
  for (let i = 0; i < 100; i++) lines.push(event('EVIDENCE_EXPORTED', i));
  for (let i = 0; i < 1_000; i++) lines.push(event('API_CALL', i));
  writeFileSync(journal, lines.join('\n') + '\n');
  lines.length = 0;
}

/** One export round: its time, size and audit's peak memory, and the checker's verdict, on one line. */
async function exportRound(
  round: number,
  x: {
    pid: number;
    auditUrl: string;
    mandateId: string;
    tokens: InternalTokens;
    caller: Caller;
    jwks: unknown;
  },
): Promise<void> {
  const { pid, tokens, caller, jwks } = x;
  const peakReset = resetPeak(pid);
  const before = memoryOf(pid);
  let sampledPeak = before.rss;
  const sampler = setInterval(() => {
    sampledPeak = Math.max(sampledPeak, memoryOf(pid).rss);
  }, 10);
  const started = performance.now();
  const res = await fetch(`${x.auditUrl}/v1/mandates/${x.mandateId}/evidence`, {
    headers: { [INTERNAL_TOKEN_HEADER]: await tokens.mint(caller(), 'audit') },
  });
  const firstByte = performance.now() - started;
  const text = await res.text();
  const total = performance.now() - started;
  clearInterval(sampler);
  const after = memoryOf(pid);
  if (res.status !== 200) throw new Error(`export: ${res.status} ${text.slice(0, 300)}`);
  const results = await verifyBundleText(text, { trustedKeys: (jwks as { keys: never[] }).keys });
  const failed = results.filter((r) => !r.ok).map((r) => r.check);
  const bundle = JSON.parse(text) as { events: unknown[]; evidence_exports: number };
  const peak = peakReset ? Math.max(after.peak, sampledPeak) : sampledPeak;
  process.stdout.write(
    `round ${round}: ${(total / 1000).toFixed(2)} s (first byte ${(firstByte / 1000).toFixed(2)} s), ` +
      `${(text.length / 1024 / 1024).toFixed(1)} MiB, ${bundle.events.length.toLocaleString('en')} events, ` +
      `evidence_exports ${bundle.evidence_exports}; audit RSS ${before.rss.toFixed(0)} → peak ${peak.toFixed(0)} MiB ` +
      `(+${(peak - before.rss).toFixed(0)} MiB${peakReset ? ', VmHWM' : ', sampled every 10 ms'}); ` +
      `checker: ${failed.length === 0 ? 'every check OK' : `FAILED ${failed.join(', ')}`}\n`,
  );
}

async function main() {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-evidence-'));
  const secret = randomBytes(32).toString('hex');
  const tokens = internalTokens(secret);
  const tenantId = newId('tnt');
  const caller = (): CallerContext => ({
    tenantId,
    actor: { type: 'api_key', key_id: 'key_bench' },
    permissions: ['mandates:read', 'mandates:write', 'events:read'],
    requestId: newId('req'),
  });
  const children: ChildProcess[] = [];
  try {
    const mandates = await startService('mandates', {
      INTERNAL_TOKEN_SECRET: secret,
      LOCAL_SIGNING_KEY_FILE: path.join(dir, 'signing-key.json'),
    });
    children.push(mandates.child);
    const mandate = await createMandate(mandates.url, tokens, caller);
    // The journal the audit process reads back at start: one JSON event per line.
    const journal = path.join(dir, 'audit.jsonl');
    writeJournal(journal, mandate.id, tenantId, caller);

    const audit = await startService('audit', {
      INTERNAL_TOKEN_SECRET: secret,
      MANDATES_URL: mandates.url,
      AUDIT_STORE_FILE: journal,
    });
    children.push(audit.child);
    const pid = audit.child.pid!;
    const loaded = memoryOf(pid);
    process.stdout.write(
      `bench:evidence — ${EVENTS.toLocaleString('en')} events about one mandate (+100 EVIDENCE_EXPORTED, +1,000 other), audit on its in-memory store (journal file)\n` +
        `audit RSS after loading: ${loaded.rss.toFixed(0)} MiB (peak so far ${loaded.peak.toFixed(0)} MiB)\n`,
    );
    const jwks = await (await fetch(`${mandates.url}/v1/.well-known/jwks.json`)).json();

    for (let round = 1; round <= ROUNDS; round++) {
      await exportRound(round, { pid, auditUrl: audit.url, mandateId: mandate.id, tokens, caller, jwks });
    }
  } finally {
    for (const child of children.reverse()) await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`bench:evidence failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
