import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import { errorEnvelopeSchema } from '@mandate/shared/core';
import { errorStatusesOf, type RouteContract } from '@mandate/shared/contract';
import { closeServer, listenOn } from '@mandate/shared/testing';
import { RouteMatcher } from '@mandate/gateway/testing';
import { CONTRACTS } from '@mandate/gateway';

/** One answer of the public API, as a client saw it. */
export interface RecordedResponse {
  method: string;
  path: string;
  status: number;
  contentType: string | undefined;
  body: string;
}

export interface RecordingProxy {
  url: string;
  records: RecordedResponse[];
  close(): Promise<void>;
}

/**
 * An HTTP proxy in front of the gateway that records every answer (method, path, status, body)
 * on its way to the client, whoever the client is (fetch in a test, curl in a README block), so a
 * test can check each against the route's contract afterwards.
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const records: RecordedResponse[] = [];
  const server = createServer((req, res) => {
    const forwarded = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const body = Buffer.concat(chunks);
          records.push({
            method: req.method ?? '',
            path: req.url ?? '',
            status: answer.statusCode ?? 0,
            contentType: answer.headers['content-type'],
            body: body.toString('utf8'),
          });
          res.writeHead(answer.statusCode ?? 502, withoutHopByHop(answer.headers));
          res.end(body);
        });
        answer.on('error', () => res.destroy());
      },
    );
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  });
  server.keepAliveTimeout = 1000;
  return { url: await listenOn(server), records, close: () => closeServer(server) };
}

function withoutHopByHop(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out = { ...headers };
  // The body is re-sent whole, with its own length.
  delete out['transfer-encoding'];
  delete out.connection;
  delete out['keep-alive'];
  delete out['content-length'];
  return out;
}

/** The gateway's own endpoints that are no route of the public API. */
const OUTSIDE_THE_CONTRACT = new Set(['/healthz', '/readyz', '/metrics']);
const strictEnvelope = errorEnvelopeSchema.strict();
const matcher = new RouteMatcher([...CONTRACTS]);

/**
 * Every recorded answer checked against the contract of the route it matched: the status must be
 * declared for that route (a success status by the contract, an error status by the contract or by
 * what the route's properties imply), a success body must parse with that status's schema, an error
 * body must be exactly `{error, message}`. Answers the problems, one line each.
 */
export function contractViolations(records: readonly RecordedResponse[]): string[] {
  const problems: string[] = [];
  for (const r of records) {
    const path = r.path.split('?')[0]!;
    if (OUTSIDE_THE_CONTRACT.has(path)) continue;
    const where = `${r.method} ${r.path} → ${r.status}`;
    let body: unknown;
    try {
      // A wallet's request object and a status list are compact JWS, not JSON: their contract schema is a string.
      const jws = /^application\/(oauth-authz-req|statuslist)\+jwt/.test(String(r.contentType ?? ''));
      body = r.body === '' ? undefined : jws ? r.body : JSON.parse(r.body);
    } catch {
      problems.push(`${where}: the body is not JSON: ${r.body.slice(0, 200)}`);
      continue;
    }
    const match = matcher.match(r.method, path);
    if (match.kind !== 'match') {
      const expected = match.kind === 'not_found' ? 404 : 405;
      if (r.status !== expected) problems.push(`${where}: no route matches, so ${expected} was expected`);
      else checkEnvelope(where, body, problems);
      continue;
    }
    const route = match.rule as RouteContract;
    const success = route.responses[r.status];
    if (success) {
      const parsed = success.schema.safeParse(body);
      if (!parsed.success)
        problems.push(
          `${where} (${route.operationId}): the body does not match the contract: ${parsed.error.issues
            .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
            .join('; ')}`,
        );
      continue;
    }
    if (!errorStatusesOf(route).has(r.status)) {
      problems.push(`${where} (${route.operationId}): status ${r.status} is not declared for this route`);
      continue;
    }
    checkEnvelope(`${where} (${route.operationId})`, body, problems);
  }
  return problems;
}

function checkEnvelope(where: string, body: unknown, problems: string[]) {
  const parsed = strictEnvelope.safeParse(body);
  if (!parsed.success)
    problems.push(`${where}: the error body is not exactly {error, message}: ${JSON.stringify(body)}`);
}
