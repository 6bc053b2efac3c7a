import { createConnection, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  /** The local port clients connect to (on 127.0.0.1). */
  port: number;
  /** Destroys every live connection and refuses new ones until `restore()`: a network cut, not a graceful close. */
  cut(): void;
  /** Accepts and forwards connections again. */
  restore(): void;
  /**
   * Keeps every client→target chunk from now on in the proxy (still counted in `chunksToTarget`),
   * in arrival order: requests that stay on their way for as long as the test wants.
   */
  holdToTarget(): void;
  /** Forwards the oldest `chunks` held chunks and keeps holding; without `chunks`, all of them, and stops holding. */
  releaseToTarget(chunks?: number): void;
  /** Client→target data events (one per write burst that reached the proxy) since start or the last reset. */
  readonly chunksToTarget: number;
  resetCounters(): void;
  /** Stops listening and destroys every connection. */
  close(): Promise<void>;
}

/**
 * A small TCP proxy a test controls, for cutting a real broker or database away from the code
 * under test (Redis, RabbitMQ, ...) without mocks. It also counts the chunks that go to the
 * target, which measures round trips of a request/response protocol.
 */
export async function startTcpProxy(
  targetHost: string,
  targetPort: number,
  options: {
    /** Sees every client→target chunk, with a number per connection (a protocol decoder keeps one state per connection). */
    tap?: (connection: number, chunk: Buffer) => void;
  } = {},
): Promise<TcpProxy> {
  const live = new Set<Socket>();
  let holding = false;
  const held: { upstream: Socket; chunk: Buffer }[] = [];
  let refusing = false;
  let chunksToTarget = 0;
  let connections = 0;

  const server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: targetHost, port: targetPort });
    const connection = ++connections;
    live.add(client);
    live.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      live.delete(client);
      live.delete(upstream);
    };
    client.on('data', (chunk: Buffer) => {
      chunksToTarget += 1;
      options.tap?.(connection, chunk);
      if (holding) held.push({ upstream, chunk });
      else forward(client, upstream, chunk);
    });
    client.on('end', () => upstream.end());
    upstream.pipe(client);
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;

  /** What pipe() would do, by hand so chunks can be held: a slow target slows the client down. */
  function forward(client: Socket | undefined, upstream: Socket, chunk: Buffer) {
    if (upstream.destroyed) return;
    if (!upstream.write(chunk) && client) {
      client.pause();
      upstream.once('drain', () => client.resume());
    }
  }

  const destroyAll = () => {
    for (const s of live) s.destroy();
    live.clear();
    held.length = 0;
  };

  return {
    port,
    cut() {
      refusing = true;
      destroyAll();
    },
    restore() {
      refusing = false;
    },
    holdToTarget() {
      holding = true;
    },
    releaseToTarget(chunks?: number) {
      for (const { upstream, chunk } of held.splice(0, chunks ?? held.length))
        forward(undefined, upstream, chunk);
      if (chunks === undefined) holding = false;
    },
    get chunksToTarget() {
      return chunksToTarget;
    },
    resetCounters() {
      chunksToTarget = 0;
    },
    async close() {
      refusing = true;
      destroyAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The name other test files may know it by: `start(host, port)`. */
export const start = startTcpProxy;
