import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { InProcessBus, amqpTopology, type AuditEvent } from '@mandate/shared/events';
import {
  TEST_INTERNAL_SECRET,
  callService,
  deleteAmqpTopology,
  TEST_AMQP_URL as AMQP_URL,
} from '@mandate/shared/testing';
import amqp from 'amqplib';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config';
import { MemoryIdentityStore } from '../src/store/memory-identity-store';
import { wire } from '../src/wiring';
import { operator } from './helpers';

const logger = createLogger('identity-test', 'silent');

describe('config', () => {
  it('when nothing is set, then identity listens on 8083 with the memory defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 8083,
      HOST: '127.0.0.1',
      MONGO_DB: 'mandate_identity',
      AMQP_NAMESPACE: 'mandate',
      STAGING_KEY_TTL_HOURS: 168,
    });
    expect(config.MONGO_URL).toBeUndefined();
  });

  it('when PORT is not a port, then configuration fails naming it', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
  });
});

describe('wiring', () => {
  it('when no MONGO_URL or AMQP_URL is set, then the memory store and an in-process bus are used', async () => {
    const { deps, close } = await wire(loadConfig({ INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET }), logger);
    expect(deps.store).toBeInstanceOf(MemoryIdentityStore);
    expect(deps.publisher).toBeInstanceOf(InProcessBus);
    await close();
  });

  it('when INTERNAL_TOKEN_SECRET is missing, then wiring refuses to start', async () => {
    await expect(wire(loadConfig({}), logger)).rejects.toThrow('INTERNAL_TOKEN_SECRET: is required');
  });

  it('when a publisher is passed as an override, then it is used', async () => {
    const bus = new InProcessBus();
    const { deps, close } = await wire(loadConfig({ INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET }), logger, {
      publisher: bus,
    });
    expect(deps.publisher).toBe(bus);
    await close();
  });
});

describe('wiring with RabbitMQ (real broker)', () => {
  const namespace = `test-${newId('req')}`;
  const topology = amqpTopology(namespace);
  afterAll(() => deleteAmqpTopology(topology, AMQP_URL));

  it('when AMQP_URL is set and a publisher override is passed too (embedded mode), then the variable wins', async () => {
    const bus = new InProcessBus();
    const config = loadConfig({
      INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
      AMQP_URL,
      AMQP_NAMESPACE: namespace,
    });
    const { deps, close } = await wire(config, logger, { publisher: bus, store: new MemoryIdentityStore() });
    try {
      expect(deps.publisher.kind).toBe('rabbitmq');
      expect(deps.publisher).not.toBe(bus);
    } finally {
      await close();
      await bus.close();
    }
  });

  it('when AMQP_URL is set and a tenant is created, then its events reach the audit queue without the secret', async () => {
    const config = loadConfig({
      INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
      AMQP_URL,
      AMQP_NAMESPACE: namespace,
    });
    const { deps, close } = await wire(config, logger);
    expect(deps.publisher.kind).toBe('rabbitmq');
    const app = createApp(deps);
    const server = await app.start(0);
    try {
      const res = await callService(server.url, 'POST', '/v1/platform/tenants', {
        caller: operator,
        body: { name: 'Wired' },
      });
      expect(res).toMatchObject({ status: 201 });

      const c = await amqp.connect(AMQP_URL);
      const ch = await c.createChannel();
      const raw: string[] = [];
      const deadline = Date.now() + 20_000;
      while (raw.length < 2 && Date.now() < deadline) {
        const msg = await ch.get(topology.auditQueue, { noAck: true });
        if (msg) raw.push(msg.content.toString());
        else await new Promise((r) => setTimeout(r, 50));
      }
      await c.close();
      expect(raw.filter((m) => m.includes(res.body.api_key.api_key))).toEqual([]);
      const got = raw.map((m) => JSON.parse(m) as AuditEvent);
      expect(got.map((e) => [e.type, e.tenant_id])).toEqual([
        ['TENANT_CREATED', res.body.tenant.id],
        ['API_KEY_CREATED', res.body.tenant.id],
      ]);
    } finally {
      await app.stop();
      await close();
    }
  });
});
