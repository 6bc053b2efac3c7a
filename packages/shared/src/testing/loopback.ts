import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts `server` on a free loopback port; answers its base URL. */
export async function listenOn(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Stops `server` without waiting for idle keep-alive connections to time out. */
export async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
