import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServiceClient, UpstreamUnavailable, listen } from '../src/http';

/**
 * A stopping service answers what it took and a caller's next request finds another replica
 * (docs/TESTING.md, "Fault matrix", SIGTERM under load): listen()'s close() and ServiceClient.
 */
const freeUrl = async (): Promise<string> => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
};

/** One POST on a connection of its own, answered in full: status, Connection header, body. */
function post(url: string): Promise<{ status: number; connection?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/slow`, { method: 'POST' }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('graceful stop', () => {
  it('when the server is closed while a request takes longer than the old 2 s cut, then that request is answered in full, told the connection closes, and new connections are refused', async () => {
    let arrived!: () => void;
    const requestArrived = new Promise<void>((resolve) => (arrived = resolve));
    const running = await listen((_req: IncomingMessage, res: ServerResponse) => {
      arrived();
      // A slow request (a loaded MongoDB): 3 s, past the 2 s after which a stop used to cut it.
      setTimeout(() => res.end('done'), 3_000);
    }, 0);
    const answer = post(running.url);
    await requestArrived;
    const closed = running.close();
    await expect(post(running.url)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(await answer).toEqual({ status: 200, connection: 'close', body: 'done' });
    await closed;
  }, 15_000);

  it('when the server is closed, then a request a caller sends on the keep-alive connection it holds is answered (told the connection closes), not reset', async () => {
    const running = await listen((_req: IncomingMessage, res: ServerResponse) => res.end('{}'), 0);
    const client = new ServiceClient([running.url]);
    try {
      // The caller's pool now holds an idle keep-alive connection to the server.
      expect((await client.request({ method: 'POST', path: '/v1/verify', headers: {} })).status).toBe(200);
      const closed = running.close();
      // Sent the moment the stop begins: a POST is never resent after a reset, so a reset is a failure.
      const answer = await client.request({ method: 'POST', path: '/v1/verify', headers: {} });
      expect({ status: answer.status, connection: answer.headers.connection }).toEqual({
        status: 200,
        connection: 'close',
      });
      await closed;
    } finally {
      await client.close();
    }
  }, 15_000);

  it('when a replica refuses the connection, then even a POST goes to the next replica; when one resets it after taking the request, then the POST is not sent again', async () => {
    const answered: string[] = [];
    const live = await listen((_req: IncomingMessage, res: ServerResponse) => {
      answered.push('live');
      res.end('{}');
    }, 0);
    const resetting: Server = createServer((req) => {
      answered.push('resetting');
      req.socket.destroy();
    });
    await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', resolve));
    const resettingUrl = `http://127.0.0.1:${(resetting.address() as AddressInfo).port}`;
    const refusing = new ServiceClient([await freeUrl(), live.url]);
    const cutting = new ServiceClient([resettingUrl, live.url]);
    try {
      // Concurrent calls: whatever replica the others took meanwhile, a retry goes to the other one.
      const answers = await Promise.all(
        Array.from({ length: 40 }, () =>
          refusing.request({ method: 'POST', path: '/v1/mandates', headers: {} }),
        ),
      );
      expect(answers.map((r) => r.status)).toEqual(Array(40).fill(200));
      expect(answered).toEqual(Array(40).fill('live'));
      answered.length = 0;
      await expect(
        cutting.request({ method: 'POST', path: '/v1/mandates', headers: {} }),
      ).rejects.toBeInstanceOf(UpstreamUnavailable);
      // The reset request may have run: it is not resent to the other replica.
      expect(answered).toEqual(['resetting']);
    } finally {
      await refusing.close();
      await cutting.close();
      await live.close();
      resetting.closeAllConnections();
      await new Promise((resolve) => resetting.close(resolve));
    }
  });
});
