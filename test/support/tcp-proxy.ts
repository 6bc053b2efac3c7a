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
  /**
   * A hung dependency: every connection, open or new, stays open but nothing passes either way (it
   * waits in the proxy, in order) until `restore()` lets it through. New connections are accepted.
   */
  hang(): void;
  /**
   * A silent partition of the connections open now only: they stay open and silent for good (until
   * closed), while new connections pass as usual. What a client stuck on an old socket meets.
   */
  freezeExisting(): void;
  /** Client→target data events (one per write burst that reached the proxy) since start or the last reset. */
  readonly chunksToTarget: number;
  /** Connections refused while cut (each a client's connection attempt), since start. */
  readonly refusedConnections: number;
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
  let hanging = false;
  let chunksToTarget = 0;
  let connections = 0;
  let refusedConnections = 0;
  /** Per open connection: whether it is silenced, and what waits to pass each way. */
  interface Pair {
    client: Socket;
    upstream: Socket;
    silent: 'no' | 'hung' | 'frozen';
    waiting: { to: Socket; from: Socket; chunk: Buffer }[];
  }
  const pairs = new Set<Pair>();

  const server = createServer((client) => {
    if (refusing) {
      refusedConnections += 1;
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: targetHost, port: targetPort });
    const connection = ++connections;
    live.add(client);
    live.add(upstream);
    const pair: Pair = { client, upstream, silent: hanging ? 'hung' : 'no', waiting: [] };
    pairs.add(pair);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      live.delete(client);
      live.delete(upstream);
      pairs.delete(pair);
    };
    client.on('data', (chunk: Buffer) => {
      chunksToTarget += 1;
      options.tap?.(connection, chunk);
      if (pair.silent !== 'no') pair.waiting.push({ to: upstream, from: client, chunk });
      else if (holding) held.push({ upstream, chunk });
      else forward(client, upstream, chunk);
    });
    client.on('end', () => upstream.end());
    upstream.on('data', (chunk: Buffer) => {
      if (pair.silent !== 'no') pair.waiting.push({ to: client, from: upstream, chunk });
      else forward(upstream, client, chunk);
    });
    upstream.on('end', () => client.end());
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

  /** What pipe() would do, by hand so chunks can be held: a slow receiver slows the sender down. */
  function forward(from: Socket | undefined, to: Socket, chunk: Buffer) {
    if (to.destroyed) return;
    if (!to.write(chunk) && from) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  }

  const destroyAll = () => {
    for (const s of live) s.destroy();
    live.clear();
    pairs.clear();
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
      hanging = false;
      for (const pair of pairs) {
        if (pair.silent !== 'hung') continue;
        pair.silent = 'no';
        for (const { from, to, chunk } of pair.waiting.splice(0)) forward(from, to, chunk);
      }
    },
    hang() {
      hanging = true;
      for (const pair of pairs) if (pair.silent === 'no') pair.silent = 'hung';
    },
    freezeExisting() {
      for (const pair of pairs) pair.silent = 'frozen';
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
    get refusedConnections() {
      return refusedConnections;
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
