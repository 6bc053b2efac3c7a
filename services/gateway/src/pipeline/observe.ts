import { processMetrics } from '@mandate/shared/observability';
import type { Principal } from '../auth/authenticate';
import type { GatewayDeps } from '../deps';
import { endedStatus, type Call } from './call';

/**
 * The access log's fields: who called what and how it went. The caller is named by tenant and key
 * id or subject, never by its credential (the Authorization / X-Api-Key value is not read here).
 */
export function accessLogLine(
  method: string | undefined,
  route: string | null,
  status: number,
  started: number,
  requestId: string,
  principal: Principal | null,
) {
  return {
    method,
    route: route ?? '(no route)',
    status,
    ms: Math.round((performance.now() - started) * 10) / 10,
    request_id: requestId,
    tenant: principal?.tenantId ?? null,
    ...(principal?.actor.key_id ? { key_id: principal.actor.key_id } : {}),
    ...(principal?.actor.subject_id ? { subject: principal.actor.subject_id } : {}),
    ...(principal?.actor.type === 'operator' ? { caller: 'operator' } : {}),
  };
}

/**
 * Step 2, every API request is measured and (ACCESS_LOG) logged when it ends. Labelled by the
 * matched route pattern; a path no route matches is one label, not one per path. On 'close', not
 * 'finish': an answer that never finished (a streamed one cut off) counts too.
 */
export function observeStep(deps: GatewayDeps) {
  // Decided once: with LOG_LEVEL above info (the benchmark), requests pay nothing for it.
  const accessLog = deps.accessLog === true && deps.logger.isLevelEnabled('info');
  const metrics = processMetrics();
  return (call: Call): void => {
    const { req, res, started } = call;
    res.once('close', () =>
      metrics.observeHttp(
        'gateway',
        req.method ?? '',
        call.routePattern ?? '(unmatched)',
        endedStatus(res),
        (performance.now() - started) / 1000,
      ),
    );
    if (accessLog) {
      res.once('close', () =>
        deps.logger.info(
          accessLogLine(
            req.method,
            call.routePattern,
            endedStatus(res),
            started,
            call.requestId,
            call.principal,
          ),
          'request',
        ),
      );
    }
  };
}
