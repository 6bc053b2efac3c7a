import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { closeServer, listenOn } from '@mandate/shared/testing';
import { eventually as pollUntil } from '../../../test/support/eventually';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** How the receiver answers one request (default: 200 "ok"). */
export type Answer = (req: Received, res: ServerResponse) => void;

/**
 * A webhook receiver on loopback for the tests: records every request and answers as told. `down()`
 * closes its listener (connections refused); `up()` listens on the same port again.
 */
export async function startReceiver() {
  const received: Received[] = [];
  let answer: Answer = (_req, res) => res.end('ok');
  const sockets = new Set<import('node:net').Socket>();
  const make = () => {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r = { path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        received.push(r);
        answer(r, res);
      });
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    return server;
  };
  let server = make();
  const url = await listenOn(server);
  const port = Number(new URL(url).port);
  return {
    url,
    port,
    received,
    answerWith(next: Answer) {
      answer = next;
    },
    /** Received requests carrying this webhook-id. */
    withId: (id: string) => received.filter((r) => r.headers['webhook-id'] === id),
    async down() {
      for (const s of sockets) s.destroy();
      await closeServer(server);
    },
    async up() {
      server = make();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      });
    },
    async close() {
      for (const s of sockets) s.destroy();
      if (server.listening) await closeServer(server);
    },
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * Polls `check` until it holds (no sleeps as synchronisation): throws naming `what` after
 * `timeoutMs`. The repository's one polling loop, with `false` also meaning "not yet" and a short
 * interval (deliveries are quick).
 */
export function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  return pollUntil(
    async () => {
      const value = await check();
      return value === false ? undefined : value;
    },
    timeoutMs,
    what,
    25,
  );
}
