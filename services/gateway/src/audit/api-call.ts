import type { IncomingMessage } from 'node:http';
import { buildEvent, CLIENT_HEADER, type AuditEvent } from '@mandate/shared/events';
import { header, type Principal } from '../auth/authenticate';

const CLIENT_HEADER_NAME = CLIENT_HEADER.toLowerCase();

/**
 * How the call reached the API (docs/API.md#audit-of-every-call): `dashboard` when the dashboard
 * says it sent it (X-Mandate-Client: dashboard) and the caller signed in (a person's JWT, the
 * operator token). An API key is a program's, so its calls are `api` whatever header they carry:
 * a stolen key cannot hide its reads among the dashboard's (docs/DECISIONS.md#the-dashboards-own-reads).
 */
export function viaOf(req: IncomingMessage, principal: Principal): 'api' | 'dashboard' {
  if (principal.actor.type === 'api_key') return 'api';
  return header(req, CLIENT_HEADER_NAME)?.trim().toLowerCase() === 'dashboard' ? 'dashboard' : 'api';
}

/** The audit record of one authenticated API call (docs/API.md, "Audit of every call": method, route, status, duration_ms, key_id, via). */
export function apiCallEvent(args: {
  principal: Principal;
  requestId: string;
  method: string;
  route: string;
  path: string;
  status: number;
  durationMs: number;
  via: 'api' | 'dashboard';
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
      via: args.via,
    },
  });
}
