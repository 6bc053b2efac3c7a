import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  INTERNAL_TOKEN_HEADER,
  UpstreamUnavailable,
  serviceUnavailable,
  type ServiceClient,
} from '@mandate/shared';

/** Request headers a service may need; everything else (credentials above all) stays at the gateway. */
const FORWARDED_REQUEST_HEADERS = ['content-type', 'accept', 'idempotency-key', 'if-none-match'];
/** Response headers a client may need from a service. */
const RETURNED_RESPONSE_HEADERS = [
  'content-type',
  'retry-after',
  'idempotent-replayed',
  'location',
  'allow',
  'cache-control',
  'etag',
];

/** Forwards the request as-is (the body unparsed) and streams the service's answer back. */
export async function forward(
  req: IncomingMessage,
  res: ServerResponse,
  client: ServiceClient,
  serviceName: string,
  path: string,
  internalToken: string,
  call: { requestId: string; body: Buffer | undefined },
): Promise<void> {
  const headers: Record<string, string> = {
    [INTERNAL_TOKEN_HEADER]: internalToken,
    'x-request-id': call.requestId,
  };
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const body = call.body && call.body.length > 0 ? call.body : undefined;
  if (body) headers['content-length'] = String(body.length);
  const url = req.url ?? '';
  const query = url.indexOf('?');
  const target = query >= 0 ? path + url.slice(query) : path;

  let upstream;
  try {
    upstream = await client.request({ method: req.method!, path: target, headers, body });
  } catch (err) {
    if (err instanceof UpstreamUnavailable)
      throw serviceUnavailable(`${capitalise(serviceName)} service unavailable`);
    throw err;
  }
  res.statusCode = upstream.status;
  for (const name of RETURNED_RESPONSE_HEADERS) {
    const value = upstream.headers[name];
    if (value !== undefined) res.setHeader(name, value);
  }
  res.end(upstream.body);
}

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
