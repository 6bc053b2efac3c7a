import { buildEvent, type AuditEvent } from '@mandate/shared';
import type { Principal } from '../auth/authenticate';

/** The audit record of one authenticated API call (docs/API.md, "Audit of every call": method, route, status, duration_ms, key_id). */
export function apiCallEvent(args: {
  principal: Principal;
  requestId: string;
  method: string;
  route: string;
  path: string;
  status: number;
  durationMs: number;
}): AuditEvent {
  const { principal } = args;
  return buildEvent({
    type: 'API_CALL',
    tenantId: principal.tenantId,
    resource: null,
    caller: {
      tenantId: principal.tenantId,
      actor: principal.actor,
      permissions: principal.permissions,
      requestId: args.requestId,
    },
    data: {
      method: args.method,
      route: args.route,
      path: args.path,
      status: args.status,
      duration_ms: Math.round(args.durationMs * 100) / 100,
      key_id: principal.actor.key_id ?? null,
      subject_id: principal.actor.subject_id ?? null,
    },
  });
}
