import { newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { InProcessBus } from '@mandate/shared/events';
import { listen } from '@mandate/shared/http';
import { callService, callerFor, TEST_INTERNAL_SECRET } from '@mandate/shared/testing';
import express from 'express';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config';
import { HttpMandateReader } from '../src/mandates/http-mandate-reader';
import { MemoryMandateReader } from '../src/mandates/memory-mandate-reader';
import { wire } from '../src/wiring';
import { buildMandate } from './factories';

const logger = createLogger('verify-test', 'silent');

describe('config', () => {
  it('when nothing is set, then PORT is 8082 and MANDATES_URL is unset', () => {
    const config = loadConfig({});
    expect({ port: config.PORT, mandates: config.MANDATES_URL, timeout: config.MANDATES_TIMEOUT_MS }).toEqual(
      {
        port: 8082,
        mandates: undefined,
        timeout: 2000,
      },
    );
  });

  it('when MANDATES_URL lists replicas, then each becomes one URL', () => {
    expect(loadConfig({ MANDATES_URL: 'http://a:8081, http://b:8081' }).MANDATES_URL).toEqual([
      'http://a:8081',
      'http://b:8081',
    ]);
  });

  it('when MANDATES_URL holds something that is not a URL, then parsing fails', () => {
    expect(() => loadConfig({ MANDATES_URL: 'nope' })).toThrow('MANDATES_URL');
  });
});

describe('wire', () => {
  it('when MANDATES_URL and the secret are set, then the HTTP reader and an in-process bus are used', async () => {
    const wired = await wire(
      loadConfig({ MANDATES_URL: 'http://127.0.0.1:1', INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET }),
      logger,
    );
    expect(wired.deps.reader).toBeInstanceOf(HttpMandateReader);
    expect(wired.deps.publisher).toBeInstanceOf(InProcessBus);
    await wired.close();
  });

  it('when MANDATES_URL is set and a reader override is passed too, then the variable wins', async () => {
    const override = new MemoryMandateReader();
    const wired = await wire(
      loadConfig({ MANDATES_URL: 'http://127.0.0.1:1', INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET }),
      logger,
      { reader: override },
    );
    expect(wired.deps.reader).toBeInstanceOf(HttpMandateReader);
    await wired.close();
  });

  it('when no MANDATES_URL or AMQP_URL is set and overrides are passed, then the overrides are used', async () => {
    const reader = new MemoryMandateReader();
    const bus = new InProcessBus();
    const wired = await wire(loadConfig({ INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET }), logger, {
      reader,
      publisher: bus,
    });
    expect({ reader: wired.deps.reader === reader, publisher: wired.deps.publisher === bus }).toEqual({
      reader: true,
      publisher: true,
    });
    await wired.close();
    await bus.close();
  });

  it('when neither MANDATES_URL nor a reader is given, then wiring refuses to start', async () => {
    await expect(wire(loadConfig({ INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET }), logger)).rejects.toThrow(
      'MANDATES_URL: is required',
    );
  });

  it('when no INTERNAL_TOKEN_SECRET is set, then wiring refuses to start', async () => {
    await expect(wire(loadConfig({}), logger, { reader: new MemoryMandateReader() })).rejects.toThrow(
      'INTERNAL_TOKEN_SECRET',
    );
  });

  it('when wired against a mandates stub, then a verify reads through it end to end', async () => {
    const mandate = buildMandate();
    const stub = express();
    stub.get('/internal/v1/mandates/:id', (req, res) => {
      if (req.params.id === mandate.id && req.header('x-internal-token')) res.json(mandate);
      else res.status(404).json({ error: 'NOT_FOUND', message: 'Mandate not found' });
    });
    const mandates = await listen(stub, 0);
    const wired = await wire(
      loadConfig({ MANDATES_URL: mandates.url, INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET }),
      logger,
    );
    const verify = createApp(wired.deps);
    const server = await verify.start();

    const allowed = await callService(server.url, 'POST', '/v1/verify', {
      caller: callerFor(mandate.tenant_id),
      body: { mandate_id: mandate.id, action: 'payments:create' },
    });
    const missing = await callService(server.url, 'POST', '/v1/verify', {
      caller: callerFor(mandate.tenant_id),
      body: { mandate_id: newId('mdt'), action: 'payments:create' },
    });
    expect([allowed.status, allowed.body.decision, missing.status]).toEqual([200, 'ALLOW', 404]);

    await verify.stop();
    await wired.close();
    await mandates.close();
  });
});
