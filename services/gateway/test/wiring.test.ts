import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { InProcessBus } from '@mandate/shared/events';
import { ServiceClient } from '@mandate/shared/http';
import {
  TEST_AMQP_URL,
  TEST_INTERNAL_SECRET,
  deleteAmqpTopology,
  testTopology,
} from '@mandate/shared/testing';
import { loadGatewayConfig } from '../src/config';
import { MemoryIdempotencyStore, RedisIdempotencyStore, createIdempotency } from '../src/idempotency';
import { createLimiter } from '../src/limits';
import { wire } from '../src/wiring';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const logger = createLogger('gateway-test', 'silent');

/** What every gateway wiring needs; the upstreams are never called here. */
const baseEnv = {
  INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
  OPERATOR_TOKEN: 'o'.repeat(32),
  MANDATES_URL: 'http://127.0.0.1:1',
  VERIFY_URL: 'http://127.0.0.1:1',
  IDENTITY_URL: 'http://127.0.0.1:1',
  AUDIT_URL: 'http://127.0.0.1:1',
};

describe('gateway wiring', () => {
  afterEach(() => jest.restoreAllMocks());

  it('when a late step of the wiring fails, then what it had built is closed before the error goes on', async () => {
    const closedClients = jest.spyOn(ServiceClient.prototype, 'close');
    const closedBuses = jest.spyOn(InProcessBus.prototype, 'close');
    // The dashboard's OIDC settings are checked last, after the upstream clients and the bus exist.
    const config = loadGatewayConfig({ ...baseEnv, DASHBOARD_OIDC_ISSUER: 'https://id.example.com' });
    await expect(wire(config, logger)).rejects.toThrow(/DASHBOARD_OIDC_CLIENT_ID/);
    expect(closedClients).toHaveBeenCalledTimes(4);
    expect(closedBuses).toHaveBeenCalledTimes(1);
  });

  it('when closing one dependency fails, then the others are still closed and the failure is logged', async () => {
    const lines: { level: number; msg: string }[] = [];
    const capturing = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    const closedClients = jest.spyOn(ServiceClient.prototype, 'close');
    jest.spyOn(InProcessBus.prototype, 'close').mockRejectedValueOnce(new Error('bus stuck'));
    const { close } = await wire(loadGatewayConfig(baseEnv), capturing);
    await close();
    // The bus was built after the clients, so it is closed first: its failure stops nothing.
    expect(closedClients).toHaveBeenCalledTimes(4);
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 40, msg: 'gateway: closing a dependency failed' }),
    );
  });

  it('when no AMQP_URL or REDIS_URL is set, then an in-process bus and in-memory idempotency records are used', async () => {
    const { deps, close } = await wire(loadGatewayConfig(baseEnv), logger);
    try {
      expect(deps.publisher).toBeInstanceOf(InProcessBus);
      expect(deps.idempotency?.store).toBeInstanceOf(MemoryIdempotencyStore);
    } finally {
      await close();
    }
  });

  it('when no AMQP_URL or REDIS_URL is set and overrides are passed, then the overrides are used and not closed', async () => {
    const bus = new InProcessBus(logger);
    const closeBus = jest.spyOn(bus, 'close');
    const { deps, close } = await wire(loadGatewayConfig(baseEnv), logger, { publisher: bus });
    await close();
    await bus.close();
    // The caller owns what it passed in: one close, its own.
    expect({ publisher: deps.publisher === bus, closed: closeBus.mock.calls.length }).toEqual({
      publisher: true,
      closed: 1,
    });
  });

  it('when the development sign-in is asked for on a non-loopback HOST, then it is off and one warning line says why; on loopback, it is on', async () => {
    const lines: { level: number; msg: string }[] = [];
    const capturing = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    for (const HOST of ['0.0.0.0', '::', '192.0.2.10', 'gateway.internal']) {
      const { deps, close } = await wire(loadGatewayConfig({ ...baseEnv, HOST }), capturing, {
        devSignIn: true,
      });
      await close();
      expect({ HOST, devSignIn: deps.dashboard?.devSignIn }).toEqual({ HOST, devSignIn: undefined });
      const said = lines.splice(0).filter((l) => /development sign-in/.test(l.msg));
      expect(said).toEqual([
        expect.objectContaining({
          level: 40,
          msg: `development sign-in off: HOST=${HOST} is not a loopback address, and anyone who reaches the port could sign in as any subject`,
        }),
      ]);
    }
    for (const HOST of ['127.0.0.1', 'localhost', '::1']) {
      const { deps, close } = await wire(loadGatewayConfig({ ...baseEnv, HOST }), logger, {
        devSignIn: true,
      });
      await close();
      expect({ HOST, on: deps.dashboard?.devSignIn !== undefined }).toEqual({ HOST, on: true });
    }
  });

  it('when INTERNAL_TOKEN_SECRET is missing, then wiring refuses to start', async () => {
    await expect(wire(loadGatewayConfig({ ...baseEnv, INTERNAL_TOKEN_SECRET: '' }), logger)).rejects.toThrow(
      'INTERNAL_TOKEN_SECRET: is required',
    );
  });
});

describe('gateway wiring with RabbitMQ and Redis (real servers)', () => {
  const topology = testTopology();
  let spoolDir: string;
  beforeAll(async () => {
    spoolDir = await mkdtemp(path.join(tmpdir(), 'gateway-wiring-'));
  });
  afterAll(async () => {
    await deleteAmqpTopology(topology, TEST_AMQP_URL);
    await rm(spoolDir, { recursive: true, force: true });
  });

  it('when AMQP_URL and REDIS_URL are set and overrides are passed too, then the variables win', async () => {
    const prefix = `test-${newId('req')}`;
    const bus = new InProcessBus(logger);
    const limiter = await createLimiter({ prefix }, logger);
    const idempotency = await createIdempotency({ prefix }, logger);
    const config = loadGatewayConfig({
      ...baseEnv,
      AMQP_URL: TEST_AMQP_URL,
      AMQP_NAMESPACE: topology.namespace,
      EVENT_SPOOL_DIR: spoolDir,
      REDIS_URL,
      REDIS_PREFIX: `${prefix}:`,
    });
    const { deps, close } = await wire(config, logger, { publisher: bus, limiter, idempotency });
    try {
      expect(deps.publisher).not.toBe(bus);
      expect(deps.publisher.kind).toBe('rabbitmq');
      expect(deps.limiter).not.toBe(limiter);
      expect(deps.idempotency).not.toBe(idempotency);
      expect(deps.idempotency?.store).toBeInstanceOf(RedisIdempotencyStore);
    } finally {
      // Nothing was written under the prefix: no request went through.
      await close();
      await bus.close();
      await limiter.close();
      await idempotency.store.close();
    }
  });
});
