import { runToExit } from '../support/script-process';
import { apiClient, createTenant, freePort, startStack, type Stack } from '../support/stack';

/** The JSON log lines of a process's output. */
const logLines = (output: string[]) =>
  output
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('what the services print', () => {
  it('when a variable is bad, then the service prints one line per bad variable, naming it, and exits 1 without a stack trace', async () => {
    const result = await runToExit('services/verify/src/main.ts', { PORT: '70000', LOG_LEVEL: 'loud' });
    expect(result).toEqual({
      code: 1,
      lines: [
        'config error: LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent',
        'config error: PORT: must be a whole number between 0 and 65535 (0: any free port)',
      ],
    });
  }, 30_000);

  it('when npm start gets a bad PORT, then it prints that one line and exits 1 before starting any service', async () => {
    const result = await runToExit('scripts/embedded.ts', { PORT: 'abc' });
    expect(result).toEqual({
      code: 1,
      lines: ['config error: PORT: must be a whole number between 0 and 65535 (0: any free port)'],
    });
  }, 30_000);

  // docs/CONFIGURATION.md, "The launchers": every service's configuration is checked before the first starts.
  it('when npm start gets a bad variable of the last service it starts (audit), then it prints that one line and exits 1 before any service logs', async () => {
    const port = String(await freePort());
    const result = await runToExit('scripts/embedded.ts', {
      PORT: port,
      AUDIT_PREFETCH: '0',
      LOG_LEVEL: 'info',
    });
    expect(result).toEqual({ code: 1, lines: ['config error: AUDIT_PREFETCH: must be between 1 and 65535'] });
  }, 30_000);

  describe('five processes on RabbitMQ and Redis, logging at info', () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack({ all: { LOG_LEVEL: 'info' } });
    }, 90_000);
    afterAll(async () => {
      await stack?.stop();
    }, 30_000);

    it('when requests pass the gateway, then each gets one access-log line with method, route, status, time, request id, tenant and key id, and never the credential', async () => {
      const tenant = await createTenant(stack, { name: 'Logged' });
      const api = apiClient(stack.gateway.url);
      const listed = await api('GET', '/v1/mandates?limit=1', {
        auth: tenant.auth,
        headers: { 'x-request-id': 'req-access-log-1' },
      });
      expect(listed.status).toBe(200);
      const bogus = 'msk_' + 'x'.repeat(43);
      const refused = await api('GET', '/v1/mandates', {
        headers: { 'x-api-key': `${tenant.tenant.id}:${bogus}`, 'x-request-id': 'req-access-log-2' },
      });
      expect(refused.status).toBe(401);

      const requests = () => logLines(stack.gateway.output).filter((l) => l.msg === 'request');
      const deadline = Date.now() + 20_000;
      while (requests().filter((l) => String(l.request_id).startsWith('req-access-log-')).length < 2) {
        if (Date.now() > deadline) throw new Error(`no access log lines:\n${stack.gateway.output.join('')}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const byId = (id: string) => requests().filter((l) => l.request_id === id);
      expect(byId('req-access-log-1')).toEqual([
        expect.objectContaining({
          method: 'GET',
          route: '/v1/mandates',
          status: 200,
          ms: expect.any(Number),
          tenant: tenant.tenant.id,
          key_id: tenant.api_key.key_id,
        }),
      ]);
      expect(byId('req-access-log-2')).toEqual([
        expect.objectContaining({ method: 'GET', route: '/v1/mandates', status: 401, tenant: null }),
      ]);
      const all = stack.gateway.output.join('');
      expect(all).not.toContain(tenant.api_key.api_key);
      expect(all).not.toContain(bogus);
    }, 30_000);

    it('when a service starts as its own process, then its startup lines say so and name its adapters, never "embedded"', () => {
      const mandates = stack.services.mandates.output.join('');
      expect(mandates).not.toMatch(/embedded/i);
      expect(logLines(stack.services.mandates.output)).toContainEqual(
        expect.objectContaining({
          msg: 'mandates listening (separate process)',
          mode: 'separate process',
          events: 'RabbitMQ',
          // Which topology: one node here (a cluster's nodes: "cluster of 3 nodes: …").
          amqp: expect.stringMatching(/^single node \S+:\d+$/),
          redis: 'Redis',
          store: 'in memory (no MONGO_URL)',
        }),
      );
      expect(logLines(stack.services.verify.output)).toContainEqual(
        expect.objectContaining({ msg: 'verify listening (separate process)', events: 'RabbitMQ' }),
      );
    });

    it('when the gateway is stopped with SIGTERM, then it says it is stopping and does not warn that Redis is unreachable', async () => {
      expect(await stack.gateway.stop('SIGTERM')).toBe(0);
      const out = stack.gateway.output.join('');
      expect(out).toContain('gateway stopping');
      expect(out).not.toContain('Redis unreachable');
    }, 30_000);
  });
});
