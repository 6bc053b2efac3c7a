import type { ServerResponse } from 'node:http';
import type { AuditEvent } from '@mandate/shared/events';
import { apiCallEvent, viaOf } from '../audit/api-call';
import type { GatewayDeps } from '../deps';
import type { RouteRule } from '../routes/table';
import { endedStatus, type Call } from './call';

/**
 * Step 4, every authenticated call is audited (an API_CALL event), whatever its outcome: 403, 404,
 * 5xx and cut-off answers included. A call that never authenticated has no principal: no event.
 */
export function auditStep(deps: GatewayDeps) {
  return (call: Call, rule: RouteRule, path: string): void => {
    const { req, res } = call;
    let audited = false;
    const audit = (status: number) => {
      if (audited || !call.principal || call.unaudited) return;
      audited = true;
      const event = apiCallEvent({
        principal: call.principal,
        requestId: call.requestId,
        method: req.method!,
        route: rule.path,
        path,
        status,
        durationMs: performance.now() - call.started,
        via: viaOf(req, call.principal),
      });
      handOver(deps, event);
    };
    // Handed to the publisher (which journals it at once) before the answer's last bytes go out: a
    // client that read a whole answer can count on its API_CALL even if this process is killed then.
    const end = res.end;
    res.end = function (this: ServerResponse, ...args: unknown[]) {
      audit(res.statusCode);
      return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as ServerResponse['end'];
    // An answer that never ended: the client left (499), or the upstream broke it off.
    res.once('close', () => audit(endedStatus(res)));
  };
}

/**
 * Outside the request's closure on purpose: the rejection handler lives until the publisher
 * settles (its batch window, then the broker's confirm), and a handler created inside auditStep
 * would keep the whole call (request, response, socket state) reachable all that time, so every
 * request's objects would outlive a scavenge and be promoted (docs/PERFORMANCE.md, round 14).
 */
function handOver(deps: GatewayDeps, event: AuditEvent): void {
  deps.publisher
    .publish([event])
    .catch((err) => deps.logger.error({ err, eventId: event.id }, 'API_CALL event not published'));
}
