import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { INTERNAL_TOKEN_HEADER, serviceUnavailable } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { AnswerInterrupted, UpstreamUnavailable, type ServiceClient } from '@mandate/shared/http';

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

/**
 * Forwards the request as-is (the body unparsed) and streams the service's answer back with
 * backpressure, so a large answer (an evidence bundle) never sits whole in the gateway. `buffered`
 * answers with one `res.end(body)` instead: the Idempotency-Key capture stores what it ends with
 * (those answers are small JSON). An upstream that fails mid-answer leaves the client an aborted
 * connection, never a short answer that looks complete; its status is then recorded as 502.
 */
export async function forward(
  req: IncomingMessage,
  res: ServerResponse,
  client: ServiceClient,
  serviceName: string,
  path: string,
  internalToken: string,
  call: { requestId: string; body: Buffer | undefined; buffered?: boolean },
  logger?: Logger,
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
  const request = { method: req.method!, path: target, headers, body };

  try {
    if (call.buffered) {
      const upstream = await client.request(request);
      answerHead(res, upstream.status, upstream.headers);
      res.end(upstream.body);
      return;
    }
    await client.stream(request, res, (status, upstreamHeaders) => {
      answerHead(res, status, upstreamHeaders);
      // HEAD and streamed answers keep the service's length; without one node sends chunks.
      const length = upstreamHeaders['content-length'];
      if (length !== undefined) res.setHeader('content-length', length);
    });
  } catch (err) {
    if (err instanceof UpstreamUnavailable)
      throw serviceUnavailable(`${capitalise(serviceName)} service unavailable`);
    if (err instanceof AnswerInterrupted) {
      // The status line is gone already; what the metrics, the access log and API_CALL record is this.
      res.statusCode = 502;
      logger?.warn(
        { requestId: call.requestId, service: serviceName, err: err.message },
        'upstream answer interrupted; client connection aborted',
      );
      return;
    }
    throw err;
  }
}

function answerHead(res: ServerResponse, status: number, upstream: IncomingHttpHeaders) {
  res.statusCode = status;
  for (const name of RETURNED_RESPONSE_HEADERS) {
    const value = upstream[name];
    if (value !== undefined) res.setHeader(name, value);
  }
}

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
