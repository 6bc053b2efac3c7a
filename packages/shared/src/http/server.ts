import type { Express } from 'express';
import {
  IncomingMessage,
  ServerResponse,
  createServer,
  type RequestListener,
  type Server,
  type ServerOptions,
} from 'node:http';
import { Server as NetServer, createServer as createNetServer, type AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { NOSNIFF } from './http';

/** How long a request's headers and body may take to arrive (docs/API.md, "Hardening"). */
export const REQUEST_TIMEOUT_MS = 30_000;

/**
 * How long a stopping server lets the requests it took finish before it cuts them: as long as the
 * gateway waits for a service (UPSTREAM_TIMEOUT_MS' default, docs/CONFIGURATION.md, "gateway"), so a request
 * whose caller still waits is never cut off by a rollout (docs/KUBERNETES.md, "What each component needs").
 */
export const DRAIN_TIMEOUT_MS = 10_000;

/** How long a stopping server keeps serving the keep-alive connections callers hold, answering each with Connection: close. */
export const KEEP_ALIVE_HANDOFF_MS = 500;

export interface RunningServer {
  port: number;
  url: string;
  server: Server;
  close(): Promise<void>;
}

/**
 * A port or address the process cannot listen on (docs/TROUBLESHOOTING.md, "The service does not
 * start"): one line naming PORT or HOST and what to check, which `reportStartFailure` prints as
 * `listen error: …` with no stack trace. It is a setting to fix, not an outage: the start fails.
 */
export class ListenError extends Error {
  constructor(
    readonly line: string,
    options?: { cause?: unknown },
  ) {
    super(line, options);
    this.name = 'ListenError';
  }
}

/** The one line for a listen that failed on the port or the address; undefined for any other error. */
export function listenProblem(err: unknown, port: number, host: string): string | undefined {
  switch ((err as NodeJS.ErrnoException | undefined)?.code) {
    case 'EADDRINUSE':
      return `PORT ${port} is in use by another process on ${host}: stop that process, or set PORT to a free port`;
    case 'EACCES':
      return port < 1024
        ? `PORT ${port} is not permitted on ${host}: ports below 1024 need privileges (CAP_NET_BIND_SERVICE); set PORT to 1024 or above`
        : `PORT ${port} is not permitted on ${host}: check the security policy (SELinux, AppArmor, a sandbox), or set PORT`;
    case 'EADDRNOTAVAIL':
      return `HOST ${host} is not an address of this machine: set HOST to one of its addresses, 0.0.0.0 (all) or 127.0.0.1`;
    default:
      return undefined;
  }
}

/**
 * Throws the ListenError a service would meet on `port`/`host`, by listening there a moment and
 * closing again: the launchers check the gateway's port before they start anything, so a taken
 * port is one line and no half-started stack. (Another process may still take the port in
 * between; the service's own listen then reports it the same way.)
 */
export async function assertCanListen(port: number, host: string): Promise<void> {
  if (port === 0) return;
  const probe = createNetServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (err) => {
      const problem = listenProblem(err, port, host);
      reject(problem ? new ListenError(problem, { cause: err }) : err);
    });
    probe.listen(port, host, () => resolve());
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** A request node could not parse: the envelope with a request id, then the connection closes. */
function answerUnparsable(err: NodeJS.ErrnoException, socket: Duplex): void {
  const pending = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (
    err.code === 'ECONNRESET' ||
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ||
    !socket.writable ||
    pending?.headersSent
  ) {
    socket.destroy();
    return;
  }
  const message = err.code === 'HPE_HEADER_OVERFLOW' ? 'Request headers too large' : 'Malformed HTTP request';
  const body = JSON.stringify({ error: 'BAD_REQUEST', message });
  // A HEAD response carries the length but never the body.
  const head = (err as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
  socket.end(
    `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: req_${randomUUID().replace(/-/g, '')}\r\n${NOSNIFF[0]}: ${NOSNIFF[1]}\r\nConnection: close\r\n\r\n${head ? '' : body}`,
  );
}

/**
 * Listens on `port` (0 = any free port) and returns a handle whose close() also ends keep-alive sockets.
 * `app` is an express app or a plain node:http handler (a hot path in front of one).
 */
export function listen(
  app: Express | RequestListener,
  port: number,
  host = '127.0.0.1',
): Promise<RunningServer> {
  const handler = app as RequestListener;
  // Only for an app that is express all through: a hot path in front of one (verify's) measured
  // slower with express's prototypes on its requests than with node's (docs/PERFORMANCE.md,
  // "Round 17: what each scavenge copied (issue 35)").
  const express = isExpressApp(app) ? app : undefined;
  /** Answers not yet finished: a stop lets them finish, and tells their clients not to reuse the connection. */
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  // noDelay: answers and forwarded requests are written whole; never hold them back for Nagle.
  const server = createServer({ noDelay: true, ...(express ? expressMessages(express) : {}) }, (req, res) => {
    res.setHeader(NOSNIFF[0], NOSNIFF[1]);
    // Stopping: this answer is the connection's last, so a keep-alive client (the gateway's pools)
    // opens its next request elsewhere instead of sending it on a socket about to close.
    if (draining) res.setHeader('Connection', 'close');
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
    handler(req, res);
  });
  // Upstream keep-alive sockets (the gateway's pools) must outlive the client side's idle timeout.
  server.keepAliveTimeout = 65_000;
  // docs/API.md, "Hardening": headers and body must arrive within 30 s, so a Content-Length larger than the body
  // (or a trickle of headers) holds a socket 30 s, not node's 300 s.
  server.headersTimeout = REQUEST_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  // HTTP that node cannot parse (raw non-ASCII in the path, a broken header) never reaches express:
  // answer it with the envelope and a request id too (docs/API.md, "Errors"), instead of node's bare 400.
  server.on('clientError', answerUnparsable);
  return new Promise((resolve, reject) => {
    const failed = (err: Error) => {
      const problem = listenProblem(err, port, host);
      reject(problem ? new ListenError(problem, { cause: err }) : err);
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      const actual = (server.address() as AddressInfo).port;
      resolve({
        port: actual,
        url: `http://${host}:${actual}`,
        server,
        close: () =>
          new Promise<void>((done) => {
            // No new connections; idle keep-alive ones close now, and each request in flight ends its
            // connection once answered. A request taken is answered, not cut (docs/KUBERNETES.md, "What each component needs").
            draining = true;
            for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
            const cut = setTimeout(() => server.closeAllConnections(), DRAIN_TIMEOUT_MS);
            cut.unref();
            // A keep-alive connection closed while idle races a request its caller has just written
            // to it: the caller sees a reset it cannot tell from a request that ran, so it may not
            // resend it. For KEEP_ALIVE_HANDOFF_MS the connections callers hold keep being served,
            // each answer saying Connection: close, so callers drop them first; then what is still
            // idle is closed. New connections are refused at once.
            // net's close, not http's: http's would close the idle connections at once.
            NetServer.prototype.close.call(server, () => {
              clearTimeout(cut);
              done();
            });
            setTimeout(() => server.closeIdleConnections(), KEEP_ALIVE_HANDOFF_MS);
          }),
      });
    });
  });
}

function isExpressApp(app: Express | RequestListener): app is Express {
  const candidate = app as Partial<Express>;
  return typeof candidate.request === 'object' && typeof candidate.response === 'object';
}

/**
 * node's request and answer classes, making objects whose prototypes are already express's
 * (`app.request`, `app.response`). express sets those prototypes on every request it takes, and
 * node's request objects whose prototype changed kept a good part of what each request allocated
 * alive through the scavenges (docs/PERFORMANCE.md, "Round 17: what each scavenge copied (issue
 * 35)"). Made with them, express's own setting changes nothing.
 */
function expressMessages(app: Express): Pick<ServerOptions, 'IncomingMessage' | 'ServerResponse'> {
  function ExpressRequest(socket: unknown) {
    return Reflect.construct(IncomingMessage, [socket], ExpressRequest) as IncomingMessage;
  }
  ExpressRequest.prototype = app.request;
  function ExpressResponse(req: IncomingMessage, options?: unknown) {
    return Reflect.construct(ServerResponse, [req, options], ExpressResponse) as ServerResponse;
  }
  ExpressResponse.prototype = app.response;
  return {
    IncomingMessage: ExpressRequest as unknown as typeof IncomingMessage,
    ServerResponse: ExpressResponse as unknown as typeof ServerResponse,
  };
}

/** Something an app runs while it is started (an outbox relay, a sweeper). */
export interface BackgroundTask {
  start(): void;
  stop(): Promise<void>;
}

/** What a service's app does once built: listen (start) and stop again. */
export interface AppLifecycle {
  start(port?: number, host?: string): Promise<RunningServer>;
  stop(): Promise<void>;
}

/**
 * The start()/stop() of a service's app: start listens, then starts the tasks; stop closes the
 * server first (no new requests), then stops the tasks in the order given — an outbox relay last,
 * so that it publishes what the requests stored.
 */
export function appLifecycle(
  app: Express | RequestListener,
  tasks: readonly (BackgroundTask | undefined)[] = [],
): AppLifecycle {
  let running: RunningServer | undefined;
  return {
    async start(port = 0, host = '127.0.0.1') {
      if (running) throw new Error('app already started');
      running = await listen(app, port, host);
      for (const task of tasks) task?.start();
      return running;
    },
    async stop() {
      const server = running;
      running = undefined;
      await server?.close();
      for (const task of tasks) await task?.stop();
    },
  };
}
