import type { Express } from 'express';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RunningServer {
  port: number;
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Listens on `port` (0 = any free port) and returns a handle whose close() also ends keep-alive sockets. */
export function listen(app: Express, port: number, host = '127.0.0.1'): Promise<RunningServer> {
  const server = createServer(app);
  // Upstream keep-alive sockets (the gateway's pools) must outlive the client side's idle timeout.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const actual = (server.address() as AddressInfo).port;
      resolve({
        port: actual,
        url: `http://${host}:${actual}`,
        server,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeIdleConnections();
            // In-flight requests get a moment to finish; then the rest are cut.
            setTimeout(() => server.closeAllConnections(), 2_000).unref();
          }),
      });
    });
  });
}
