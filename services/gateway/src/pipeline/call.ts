import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../auth/authenticate';

/**
 * One request on its way through the gateway's pipeline (pipeline/index.ts): what every step reads,
 * and what the steps learn that the request's end (metrics, access log, API_CALL) reports.
 */
export interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  /** The path as express reads it (parseurl), before any route matched. */
  rawPath: string;
  /** performance.now() when the request arrived. */
  started: number;
  /** The matched route's pattern, once routed: the metrics' label. */
  routePattern: string | null;
  /** Who called, once authenticated (null: a public route, or not yet). */
  principal: Principal | null;
  /** The body, when a step before forwarding had to read it (an AuthZEN batch's cost: limit-cost.ts). */
  body?: { raw: Buffer | undefined };
  /** Refused because its API_CALL could not be kept (the event spool full): no event, it would fill the spool further. */
  unaudited?: boolean;
}

/**
 * The status a call ended with, for the metrics, the access log and the API_CALL of an answer that
 * never ended: as sent once the answer finished; 499 (nginx's "client closed request") when the
 * client left before that; the 5xx the proxy set when the upstream broke off its answer (forward).
 */
export const endedStatus = (res: ServerResponse) =>
  res.writableFinished || res.statusCode >= 500 ? res.statusCode : 499;
