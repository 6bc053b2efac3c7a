import {
  amqpNodes,
  describeAmqp,
  newId,
  parseConfig,
  commonConfigShape,
  redactUrl,
} from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { RabbitEventSource, RabbitPublisher, amqpTopology, type AuditEvent } from '@mandate/shared/events';
import { anyEvent, deleteAmqpTopology, TEST_AMQP_URL } from '@mandate/shared/testing';
import amqplib from 'amqplib';
import { z } from 'zod';
import { freePort } from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

/**
 * AMQP_URL naming several nodes (docs/CONFIGURATION.md, "Every service"): the publisher and the
 * audit consumer connect to the first that answers and, when its node is lost, to the next one.
 * The nodes here are two addresses of the one real broker, each through a proxy of its own: like a
 * cluster's nodes, both serve the same queues, and cutting one proxy loses that node alone.
 */
const logger = createLogger('amqp-nodes-test', 'silent');
const broker = new URL(TEST_AMQP_URL);

describe('AMQP_URL as a list of nodes', () => {
  it('when AMQP_URL lists URLs and host:port entries, then each node is a whole URL with the first one’s credentials, vhost and query', () => {
    expect(
      amqpNodes('amqp://u:p@rabbit-0:5672/prod?heartbeat=10, rabbit-1:5672 ,amqps://v:q@rabbit-2:5671'),
    ).toEqual([
      'amqp://u:p@rabbit-0:5672/prod?heartbeat=10',
      'amqp://u:p@rabbit-1:5672/prod?heartbeat=10',
      'amqps://v:q@rabbit-2:5671',
    ]);
    expect(describeAmqp('amqp://u:p@rabbit-0:5672,rabbit-1:5672')).toBe(
      'cluster of 2 nodes: rabbit-0:5672, rabbit-1:5672',
    );
    expect(describeAmqp('amqp://u:p@rabbit-0:5672')).toBe('single node rabbit-0:5672');
    // Never a password in a log line, whichever entry holds one.
    expect(redactUrl('amqp://u:secret@rabbit-0:5672,rabbit-1,amqp://v:other@rabbit-2')).toBe(
      'amqp://u:***@rabbit-0:5672,rabbit-1,amqp://v:***@rabbit-2',
    );
  });

  it('when AMQP_URL is not a URL list, then the configuration names it and says what it must be', () => {
    const schema = z.object({ AMQP_URL: commonConfigShape.AMQP_URL });
    expect(parseConfig(schema, { AMQP_URL: 'amqp://u:p@a:5672,b:5672' }).AMQP_URL).toBe(
      'amqp://u:p@a:5672,b:5672',
    );
    for (const bad of ['not a url', 'amqp://a:5672,b c:5672', 'amqp://a:5672,/path'])
      expect(() => parseConfig(schema, { AMQP_URL: bad })).toThrow(/AMQP_URL: must be a URL, or URLs/);
  });

  describe('on the real broker, two nodes through proxies of their own', () => {
    const topology = amqpTopology(`test-${newId('req')}`);
    const proxies: TcpProxy[] = [];
    afterAll(async () => {
      await Promise.all(proxies.map((p) => p.close()));
      await deleteAmqpTopology(topology, TEST_AMQP_URL);
    });

    const nodeUrl = (port: number) => {
      const u = new URL(broker.toString());
      u.host = `127.0.0.1:${port}`;
      return u.toString();
    };

    it('when the first node does not answer, then publisher and consumer use the next, and when the node they use is lost mid-stream, they move on and every event arrives', async () => {
      const a = await startTcpProxy(broker.hostname, Number(broker.port || 5672));
      const b = await startTcpProxy(broker.hostname, Number(broker.port || 5672));
      proxies.push(a, b);
      // A node that is down at start: a port nothing listens on, listed first.
      const url = [nodeUrl(await freePort()), `127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`].join(',');

      const publisher = new RabbitPublisher(url, logger, topology);
      const source = new RabbitEventSource({ url, logger, topology, prefetch: 50, retryDelayMs: 100 });
      const received = new Map<string, number>();
      await source.startBatched(
        async (batch) => {
          for (const e of batch) received.set(e.id, (received.get(e.id) ?? 0) + 1);
        },
        { maxBatch: 20, maxDelayMs: 10 },
      );
      const events: AuditEvent[] = [];
      const publishOne = async () => {
        const event = anyEvent({ type: 'API_CALL', tenantId: 'tnt_x', resource: null, data: {} });
        events.push(event);
        // As the outbox does: a publish that was not confirmed is sent again (the consumer's
        // store drops a repeat), through whichever node the publisher reaches next.
        for (let attempt = 0; ; attempt++) {
          try {
            await publisher.publish([event]);
            return;
          } catch (err) {
            if (attempt >= 20) throw err;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      };
      try {
        for (let i = 0; i < 50; i++) await publishOne();
        // Both went past the down node to the first that answered.
        expect({ a: a.chunksToTarget > 0, b: b.chunksToTarget }).toEqual({ a: true, b: 0 });
        a.cut();
        b.resetCounters();
        for (let i = 0; i < 50; i++) await publishOne();
        const deadline = Date.now() + 20_000;
        while (events.some((e) => !received.has(e.id)) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 50));
      } finally {
        await source.stop();
        await publisher.close();
      }
      // Every event arrived (a repeat only for one delivered and not acknowledged on the lost node),
      // and the rest of the stream went through the next node.
      expect(events.filter((e) => !received.has(e.id)).map((e) => e.id)).toEqual([]);
      expect(b.chunksToTarget).toBeGreaterThan(0);
    }, 60_000);

    it('when the broker nacks a publish, then the publisher’s next publish goes over a new connection, to the next node', async () => {
      const a = await startTcpProxy(broker.hostname, Number(broker.port || 5672));
      const b = await startTcpProxy(broker.hostname, Number(broker.port || 5672));
      proxies.push(a, b);
      const url = [nodeUrl(a.port), `127.0.0.1:${b.port}`].join(',');
      const publisher = new RabbitPublisher(url, logger, topology);
      // A queue that refuses every message, bound to one event type: the broker nacks what it routes there.
      const refusing = `${topology.exchange}.refusing`;
      const admin = await amqplib.connect(TEST_AMQP_URL);
      const ch = await admin.createChannel();
      const event = () => anyEvent({ type: 'API_CALL', tenantId: 'tnt_x', resource: null, data: {} });
      try {
        await publisher.publish([event()]);
        await ch.assertQueue(refusing, {
          durable: false,
          arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' },
        });
        await ch.bindQueue(refusing, topology.exchange, topology.routingKey('API_CALL'));
        await expect(publisher.publish([event()])).rejects.toThrow('message nacked');
        await ch.deleteQueue(refusing);
        b.resetCounters();
        await publisher.publish([event()]);
        // The nacking channel was given up: the publish after it went through the next node.
        expect(b.chunksToTarget).toBeGreaterThan(0);
      } finally {
        await ch.deleteQueue(refusing).catch(() => undefined);
        await admin.close();
        await publisher.close();
      }
    }, 60_000);
  });
});
