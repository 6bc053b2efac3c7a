import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServiceClient, UpstreamUnavailable } from '../src/http';

/** A service that accepts the request and never answers: a hop that has gone silent. */
async function silentServer(): Promise<{ url: string; server: Server; requests: () => number }> {
  let requests = 0;
  const server = createServer(() => void requests++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    requests: () => requests,
  };
}

describe('ServiceClient: a silent hop', () => {
  it('when the service says nothing for the configured time, then the call fails as unavailable then, not at the 10 s default', async () => {
    const { url, server } = await silentServer();
    const client = new ServiceClient([url], undefined, undefined, 300);
    const started = Date.now();
    try {
      await expect(
        client.request({ method: 'POST', path: '/v1/mandates', headers: {} }),
      ).rejects.toBeInstanceOf(UpstreamUnavailable);
      const waited = Date.now() - started;
      expect(waited).toBeGreaterThanOrEqual(250);
      expect(waited).toBeLessThan(5_000);
    } finally {
      await client.close().catch(() => undefined);
      server.closeAllConnections();
      server.close();
    }
  });

  it('when a service goes silent on an idempotent call, then the call fails after one bound, not retried into a wait of one bound per attempt', async () => {
    const { url, server, requests } = await silentServer();
    const client = new ServiceClient([url], undefined, undefined, 300);
    const started = Date.now();
    try {
      await expect(client.request({ method: 'GET', path: '/v1/mandates/mnd_1' })).rejects.toBeInstanceOf(
        UpstreamUnavailable,
      );
      const waited = Date.now() - started;
      // docs/CONFIGURATION.md, UPSTREAM_TIMEOUT_MS: the answer is due after one bound; retried, four
      // (undici's timers fire about 1 s late at this bound: one bound takes about 1 s here, four 4 s).
      expect(requests()).toBe(1);
      expect(waited).toBeLessThan(2_500);
    } finally {
      await client.close().catch(() => undefined);
      server.closeAllConnections();
      server.close();
    }
  });
});
