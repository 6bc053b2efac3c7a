import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { newId } from '@mandate/shared/core';
import { anyEvent } from '@mandate/shared/testing';
import { verifyBundleText } from '../../packages/evidence-cli/src/verify';
import { EVERY_CHECK_PASSED } from '../../packages/evidence-cli/test/checks';
import {
  AMQP_URL,
  REDIS_URL,
  apiClient,
  createPaymentsMandate,
  createTenant,
  eventually,
  startService,
  startStack,
  type ServiceProcess,
  type Stack,
} from '../support/stack';

const EVENTS = 20_000;
/** Makes each event about 1.5 KiB, so the bundle (about 30 MiB) stands well clear of the gateway's own noise. */
const PADDING = 'p'.repeat(1_000);

/** The resident memory of a process (Linux /proc), in bytes. */
const rssOf = (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/**
 * The gateway as its own process, between a client and the audit service, for an evidence bundle
 * of 20,000 events (about 30 MiB): the gateway passes it on as it comes, so while the client holds
 * off reading, the gateway's memory stays far below the bundle's size; read, the bundle arrives
 * whole and every offline check passes on it. The events are about a mandate created through the
 * gateway; audit is restarted on its journal (AUDIT_STORE_FILE) with them appended.
 */
describe('end to end: the gateway streams a large evidence bundle in bounded memory', () => {
  let dir: string;
  let stack: Stack;
  let audit: ServiceProcess | undefined;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'gateway-streaming-'));
    stack = await startStack({ audit: { AUDIT_STORE_FILE: path.join(dir, 'audit.jsonl') } });
    api = apiClient(stack.gateway.url);
  }, 180_000);

  afterAll(async () => {
    await audit?.stop();
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('when a 20,000-event bundle is exported through the gateway, then the gateway holds a fraction of it at any time and the bundle arrives intact', async () => {
    const tenant = await createTenant(stack, { name: 'Streaming' });
    const created = await createPaymentsMandate(api, tenant.auth);
    expect(created.status).toBe(201);
    const mandateId: string = created.body.id;
    const small = await createPaymentsMandate(api, tenant.auth);
    await eventually(async () => {
      const res = await api('GET', `/v1/events?resource_id=${mandateId}`, { auth: tenant.auth });
      return res.body.data?.length > 0 ? true : undefined;
    });

    // Audit stops, its journal gets the verifications, and it starts again on the same port.
    const journal = path.join(dir, 'audit.jsonl');
    const old = stack.services.audit;
    await old.stop();
    const caller = {
      tenantId: tenant.tenant.id,
      actor: { type: 'api_key' as const, key_id: tenant.api_key.key_id },
      permissions: ['verify'],
      requestId: newId('req'),
    };
    const lines: string[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const event = anyEvent({
        type: 'VERIFICATION_PERFORMED',
        tenantId: tenant.tenant.id,
        resource: { type: 'mandate', id: mandateId },
        data: {
          decision: 'ALLOW',
          reason: 'OK',
          input: { action: 'payments:create', amount: i, note: PADDING },
        },
        caller,
      });
      lines.push(JSON.stringify(event));
    }
    appendFileSync(journal, lines.join('\n') + '\n');
    audit = await startService(
      'audit',
      {
        INTERNAL_TOKEN_SECRET: stack.internalSecret,
        AMQP_URL,
        AMQP_NAMESPACE: stack.namespace,
        REDIS_URL,
        REDIS_PREFIX: stack.redisPrefix,
        MANDATES_URL: stack.services.mandates.url,
        AUDIT_STORE_FILE: journal,
        PORT: new URL(old.url).port,
      },
      'audit (restarted)',
    );

    // A small export first: the gateway's code paths and pools are warm before its memory is read.
    expect((await api('GET', `/v1/mandates/${small.body.id}/evidence`, { auth: tenant.auth })).status).toBe(
      200,
    );
    const pid = stack.gateway.child.pid!;
    const before = rssOf(pid);

    const url = new URL(`${stack.gateway.url}/v1/mandates/${mandateId}/evidence`);
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          headers: { authorization: `Bearer ${tenant.auth}` },
        },
        resolve,
      );
      req.on('error', reject);
      req.end();
    });
    res.pause();
    expect(res.statusCode).toBe(200);
    // The client reads nothing yet: wait until the gateway's memory settles (nothing more flows in).
    let peak = rssOf(pid);
    let stableSince = Date.now();
    const deadline = Date.now() + 20_000;
    while (Date.now() - stableSince < 1_000 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      const now = rssOf(pid);
      if (now > peak) {
        peak = now;
        stableSince = Date.now();
      }
    }

    const chunks: Buffer[] = [];
    res.on('data', (d: Buffer) => chunks.push(d));
    res.resume();
    await new Promise((resolve, reject) => {
      res.once('end', resolve);
      res.once('error', reject);
    });
    const text = Buffer.concat(chunks).toString('utf8');
    const size = Buffer.byteLength(text);
    expect(size).toBeGreaterThan(EVENTS * 1_000);
    expect(peak - before).toBeLessThan(size / 3);

    const bundle = JSON.parse(text) as { events: { type: string }[] };
    expect(bundle.events.filter((e) => e.type === 'VERIFICATION_PERFORMED')).toHaveLength(EVENTS);
    const jwks = (await api('GET', '/v1/.well-known/jwks.json')).body as { keys: never[] };
    const checks = await verifyBundleText(text, { trustedKeys: jwks.keys });
    // The text-level checks (duplicate members) and then every check of a parsed bundle, all passed.
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(EVERY_CHECK_PASSED.every(([name]) => checks.some((c) => c.check === name))).toBe(true);
  }, 180_000);
});
