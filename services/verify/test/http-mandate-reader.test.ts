import express from 'express';
import { AppError, newId } from '@mandate/shared/core';
import { createLogger } from '@mandate/shared/observability';
import { listen } from '@mandate/shared/http';
import { HttpMandateReader } from '../src/mandates/http-mandate-reader';
import type { ReadContext } from '../src/mandates/mandate-reader';
import { buildMandate } from './factories';

const logger = createLogger('verify-test', 'silent');
const fastRetries = { retries: 3, baseDelayMs: 1, factor: 1, maxRetryAfterMs: 10 };

/** A stand-in for the mandates service: answers what the test sets, and records what it got. */
async function startStub() {
  const state = {
    hits: [] as { path: string; token: string | undefined; requestId: string | undefined }[],
    answer: { status: 200, body: {} as unknown },
  };
  const app = express();
  app.get('/internal/v1/mandates/:id', (req, res) => {
    state.hits.push({
      path: req.path,
      token: req.header('x-internal-token'),
      requestId: req.header('x-request-id'),
    });
    res.status(state.answer.status).json(state.answer.body);
  });
  const server = await listen(app, 0);
  return { state, server };
}

describe('HttpMandateReader', () => {
  let stub: Awaited<ReturnType<typeof startStub>>;
  let reader: HttpMandateReader;

  beforeEach(async () => {
    stub = await startStub();
    reader = new HttpMandateReader({ baseUrls: [stub.server.url], logger, retryPolicy: fastRetries });
  });
  afterEach(async () => {
    await reader.close();
    await stub.server.close();
  });

  const ctxFor = (tenantId: string): ReadContext => ({
    tenantId,
    internalToken: 'token-' + tenantId,
    requestId: 'req_abc',
  });

  it('when the mandate exists, then it is returned and the caller token and request id were forwarded', async () => {
    const mandate = buildMandate();
    stub.state.answer = { status: 200, body: mandate };
    const got = await reader.get(ctxFor(mandate.tenant_id), mandate.id);
    expect(got).toEqual(mandate);
    expect(stub.state.hits).toEqual([
      {
        path: `/internal/v1/mandates/${mandate.id}`,
        token: `token-${mandate.tenant_id}`,
        requestId: 'req_abc',
      },
    ]);
  });

  it('when the id has URL-special characters, then it is encoded into one path segment', async () => {
    stub.state.answer = { status: 404, body: { error: 'NOT_FOUND', message: 'Mandate not found' } };
    await reader.get(ctxFor(newId('tnt')), 'a/b?c');
    expect(stub.state.hits[0]?.path).toBe('/internal/v1/mandates/a%2Fb%3Fc');
  });

  it('when the mandates service answers 404, then the read is null', async () => {
    stub.state.answer = { status: 404, body: { error: 'NOT_FOUND', message: 'Mandate not found' } };
    await expect(reader.get(ctxFor(newId('tnt')), 'mdt_x')).resolves.toBeNull();
    expect(stub.state.hits).toHaveLength(1);
  });

  it('when the mandates service keeps answering 500, then it is retried and the read fails with 503', async () => {
    stub.state.answer = { status: 500, body: { error: 'INTERNAL_ERROR', message: 'boom' } };
    const err = await reader.get(ctxFor(newId('tnt')), 'mdt_x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).toEnvelope()).toEqual({
      error: 'SERVICE_UNAVAILABLE',
      message: 'Mandates service unavailable',
    });
    expect((err as AppError).status).toBe(503);
    expect(stub.state.hits).toHaveLength(1 + fastRetries.retries);
  });

  it('when the mandates service returns something that is not a mandate, then the read fails with 503', async () => {
    stub.state.answer = { status: 200, body: { id: 'mdt_x' } };
    await expect(reader.get(ctxFor(newId('tnt')), 'mdt_x')).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
    });
  });

  it("when the mandates service returns another tenant's mandate, then the read is null", async () => {
    const mandate = buildMandate();
    stub.state.answer = { status: 200, body: mandate };
    await expect(reader.get(ctxFor(newId('tnt')), mandate.id)).resolves.toBeNull();
  });

  it('when the mandates service is unreachable, then the read fails with 503', async () => {
    const closed = await listen(express(), 0);
    await closed.close();
    const dead = new HttpMandateReader({ baseUrls: [closed.url], logger, retryPolicy: fastRetries });
    await expect(dead.get(ctxFor(newId('tnt')), 'mdt_x')).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
    });
    await expect(dead.check()).resolves.toMatch(/^mandates unreachable/);
    await dead.close();
  });

  it('when the first replica is down, then the read succeeds on the next one', async () => {
    const closed = await listen(express(), 0);
    await closed.close();
    const mandate = buildMandate();
    stub.state.answer = { status: 200, body: mandate };
    const pair = new HttpMandateReader({
      baseUrls: [closed.url, stub.server.url],
      logger,
      retryPolicy: fastRetries,
    });
    await expect(pair.get(ctxFor(mandate.tenant_id), mandate.id)).resolves.toEqual(mandate);
    await pair.close();
  });

  it('when the mandates service hangs, then the read fails with 503 within the timeout', async () => {
    const app = express();
    app.get('/internal/v1/mandates/:id', () => {
      // never answers
    });
    const hanging = await listen(app, 0);
    const slow = new HttpMandateReader({
      baseUrls: [hanging.url],
      logger,
      retryPolicy: fastRetries,
      timeoutMs: 100,
    });
    const started = Date.now();
    await expect(slow.get(ctxFor(newId('tnt')), 'mdt_x')).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
    });
    expect(Date.now() - started).toBeLessThan(1_000);
    await slow.close();
    await hanging.close();
  });
});
