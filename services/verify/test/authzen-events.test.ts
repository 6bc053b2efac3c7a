import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import amqp from 'amqplib';
import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { assertTopology, parseEventMessage, type AuditEvent } from '@mandate/shared/events';
import { type RunningServer } from '@mandate/shared/http';
import {
  TEST_AMQP_URL,
  TEST_INTERNAL_SECRET,
  callService,
  callerFor,
  deleteAmqpTopology,
  testTopology,
} from '@mandate/shared/testing';
import { eventually } from '../../../test/support/eventually';
import { createApp, type VerifyApp } from '../src/app';
import { loadConfig } from '../src/config';
import { MemoryMandateReader } from '../src/mandates/memory-mandate-reader';
import { VerifyMetrics } from '../src/metrics';
import { wire } from '../src/wiring';
import { buildMandate } from './factories';

/**
 * The events of an AuthZEN batch on the real RabbitMQ, through verify's own wiring (journal,
 * batching publisher, spool): one VERIFICATION_PERFORMED per item, each stored once, in a handful of
 * broker round trips rather than one per item (docs/API.md#authzen).
 */
describe('AuthZEN batch events (real RabbitMQ)', () => {
  const topology = testTopology();
  const spoolDir = mkdtempSync(path.join(tmpdir(), 'verify-authzen-'));
  const reader = new MemoryMandateReader();
  const metrics = new VerifyMetrics();
  let close: () => Promise<void>;
  let verify: VerifyApp;
  let server: RunningServer;

  beforeAll(async () => {
    // The audit queue, as the audit service declares it, so the events can be counted there.
    const connection = await amqp.connect(TEST_AMQP_URL);
    try {
      await assertTopology(await connection.createChannel(), topology);
    } finally {
      await connection.close();
    }
    const config = loadConfig({
      AMQP_URL: TEST_AMQP_URL,
      AMQP_NAMESPACE: topology.namespace,
      INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
      EVENT_SPOOL_DIR: spoolDir,
    });
    const wired = await wire(config, createLogger('verify-authzen-events', 'silent'), { reader, metrics });
    close = wired.close;
    verify = createApp(wired.deps);
    server = await verify.start();
  });
  afterAll(async () => {
    await verify?.stop();
    await close?.();
    await deleteAmqpTopology(topology);
    rmSync(spoolDir, { recursive: true, force: true });
  });

  it('when a 100-item batch over 10 mandates is evaluated, then 100 VERIFICATION_PERFORMED reach the broker once each, in at most a few round trips', async () => {
    const tenantId = newId('tnt');
    const mandates = Array.from({ length: 10 }, () => buildMandate({ tenant_id: tenantId }));
    for (const m of mandates) reader.put(m);
    const before = metrics.brokerPublishes;
    const res = await callService(server.url, 'POST', '/v1/access/v1/evaluations', {
      caller: callerFor(tenantId),
      body: {
        subject: { type: 'agent', id: 'agent_bob' },
        action: { name: 'payments:create' },
        evaluations: Array.from({ length: 100 }, (_, i) => ({
          resource: { type: 'mandate', id: mandates[i % 10]!.id },
        })),
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.evaluations).toHaveLength(100);
    // Read off the audit queue as audit would (a message may carry a batch of events).
    const connection = await amqp.connect(TEST_AMQP_URL);
    const events: AuditEvent[] = [];
    try {
      const ch = await connection.createChannel();
      await eventually(
        async () => {
          for (let msg = await ch.get(topology.auditQueue); msg; msg = await ch.get(topology.auditQueue)) {
            events.push(...parseEventMessage(msg.content)!.events);
            ch.ack(msg);
          }
          return events.length >= 100 ? true : undefined;
        },
        20_000,
        '100 events on the audit queue',
      );
      // Nothing more arrives: each decision once.
      expect(await ch.checkQueue(topology.auditQueue)).toMatchObject({ messageCount: 0 });
    } finally {
      await connection.close();
    }
    expect(events.map((e) => [e.type, e.data.decision_id]).sort()).toEqual(
      res.body.evaluations
        .map((e: { context: { decision_id: string } }) => ['VERIFICATION_PERFORMED', e.context.decision_id])
        .sort(),
    );
    // One batch of the publisher (PUBLISH_BATCH_MAX is 500): not one round trip per item.
    expect(metrics.brokerPublishes - before).toBeLessThanOrEqual(2);
  });
});
