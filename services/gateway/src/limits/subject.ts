import { isIP } from 'node:net';
import type { Principal } from '../auth/authenticate';
import type { RouteRule } from '../routes/table';
import type { LimitSubject } from './limiter';
import { isClientIpBucket } from './plans';

/**
 * The client's address: the socket's, or — only when TRUST_PROXY says a proxy of ours sits in
 * front — the last X-Forwarded-For entry, the one that proxy appended (earlier entries are
 * whatever the client chose to send).
 */
export function clientIp(
  socketAddress: string | undefined,
  forwardedFor: string | undefined,
  trustProxy: boolean,
): string {
  if (trustProxy && forwardedFor) {
    const last = forwardedFor.split(',').pop()!.trim();
    if (isIP(last)) return normalise(last);
  }
  return normalise(socketAddress ?? 'unknown');
}

// ::ffff:1.2.3.4 and 1.2.3.4 are one client.
const normalise = (ip: string) => (ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip);

/**
 * Whom a matched request counts against, or null when it is not limited: public routes without a
 * per-IP bucket (health, the OpenAPI document), and the platform operator.
 */
export function limitSubject(
  rule: RouteRule,
  principal: Principal | null,
  ip: () => string,
): LimitSubject | null {
  if (rule.auth === 'public')
    return isClientIpBucket(rule.limit) ? { kind: 'client_ip', ip: ip(), bucket: rule.limit } : null;
  if (!principal || !principal.tenantId) return null;
  const who = principal.actor.key_id ?? principal.actor.subject_id;
  if (!who) return null;
  return { kind: 'caller', id: `${principal.tenantId}:${who}`, plan: principal.plan ?? 'beta' };
}
