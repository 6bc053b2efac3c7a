import type { IncomingMessage, RequestListener } from 'node:http';
import express from 'express';
import { markRequest, traceRequest } from '@mandate/shared/observability';
import { listen, requestIdFor, type RunningServer } from '@mandate/shared/http';
import type { GatewayDeps } from './deps';
import { gatewayHandler } from './pipeline';

export type { GatewayDeps, Upstreams } from './deps';

/**
 * The gateway is one plain node:http handler (no express on the request path: its router, req/res
 * decoration and body parser were most of the gateway's CPU per call). The path is read by
 * express's own `req.path` (parseurl, cached on the request), so every URL — a `#`, whitespace or
 * an absolute form included — gets the path express gave it.
 */
export function createApp(deps: GatewayDeps) {
  const handle = gatewayHandler(deps);

  const listener: RequestListener = (req, res) => {
    const requestId = requestIdFor(req.headers['x-request-id']);
    markRequest(requestId, 'gw.in');
    res.setHeader('X-Request-Id', requestId);
    // The trace starts here, from the client's traceparent when it sent one (a no-op unless tracing is on).
    void traceRequest(req, res, () => handle(req, res, expressPath.call(req) ?? '', requestId));
  };

  let server: RunningServer | undefined;
  return {
    app: listener,
    async start(port = 0, host = '127.0.0.1'): Promise<RunningServer> {
      server = await listen(listener, port, host);
      return server;
    },
    async stop(): Promise<void> {
      await server?.close();
      server = undefined;
    },
  };
}

export type GatewayApp = ReturnType<typeof createApp>;

/** express's `req.path` getter (parseurl's pathname), applied to node's request. */
const expressPath = Object.getOwnPropertyDescriptor(express.request, 'path')!.get! as (
  this: IncomingMessage,
) => string | null | undefined;
