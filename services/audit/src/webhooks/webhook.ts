import { createHmac, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { AppError, badRequest, newId } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import { OutboundRefused, addressRefusal, bareHost, type OutboundLookup } from '@mandate/shared/http';
import type { WebhookDeliveryView, WebhookEndpointStatus } from '../contract';

/** A stored signing secret: sealed (secret-box), never in clear; `expires_at` set once a newer one replaced it. */
export interface StoredSecret {
  sealed: string;
  /** null: the current secret; else the instant the previous one stops signing. */
  expires_at: string | null;
}

export interface WebhookEndpoint {
  id: string;
  tenant_id: string;
  url: string;
  description: string | null;
  event_types: string[];
  status: WebhookEndpointStatus;
  disabled_reason: 'manual' | 'failing' | null;
  failing_since: string | null;
  /** Newest first. */
  secrets: StoredSecret[];
  /** 0 … MAX_WEBHOOK_ENDPOINTS-1, unique per tenant: the guard of the per-tenant limit. */
  slot: number;
  /** +1 on every change: the precondition of every guarded update. */
  version: number;
  created_at: string;
  updated_at: string;
}

/** An attempt is stored as the API shows it. */
export type WebhookAttempt = WebhookDeliveryView['attempts'][number];

/** A stored delivery: what the API shows of it (its request_body is the payload), and what only the service needs. */
export interface WebhookDelivery extends Omit<WebhookDeliveryView, 'request_body'> {
  tenant_id: string;
  /** The exact body sent on every attempt (JSON text), so each retry signs the same bytes. */
  payload: string;
  /** Attempts made by the schedule (manual ones excluded): picks the next delay. */
  scheduled_attempts: number;
}

/**
 * A new delivery of one event to one endpoint: PENDING, nothing attempted, due at `at` (the
 * fan-out's, and the test event's of the API).
 */
export const pendingDelivery = (
  to: Pick<WebhookDelivery, 'tenant_id' | 'endpoint_id' | 'event_id' | 'event_type' | 'payload'>,
  at: string,
): WebhookDelivery => ({
  id: newId('whd'),
  ...to,
  status: 'PENDING',
  attempts: [],
  scheduled_attempts: 0,
  next_attempt_at: at,
  created_at: at,
  updated_at: at,
});

/** A delivery claimed by one worker: its lease token guards the write of the attempt's outcome. */
export interface ClaimedDelivery extends WebhookDelivery {
  lease_token: string;
}

export const endpointLimitReached = (max: number) =>
  new AppError('CONFLICT', `A tenant has at most ${max} webhook endpoints; delete one first`);

/** The retry delays after each failed attempt (docs/WEBHOOKS.md: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), in seconds. */
export const DEFAULT_RETRY_SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18000, 36000, 36000] as const;
/** Each delay varies by up to this fraction either way, so a receiver that comes back is not hit by every retry at once. */
export const RETRY_JITTER = 0.2;

/**
 * When the next attempt is due after `failedAttempts` scheduled attempts have failed, or null
 * when the schedule is exhausted (the delivery is FAILED). `random` in [0, 1).
 */
export function nextAttemptAt(
  now: Date,
  failedAttempts: number,
  scheduleSeconds: readonly number[],
  random: () => number = Math.random,
): Date | null {
  const base = scheduleSeconds[failedAttempts - 1];
  if (base === undefined) return null;
  const factor = 1 + RETRY_JITTER * (2 * random() - 1);
  return new Date(now.getTime() + Math.round(base * 1000 * factor));
}

/** A new signing secret, as Standard Webhooks prints them: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The `webhook-signature` header: `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>` per
 * secret, space-separated, where the key is the base64-decoded part of the secret after `whsec_`.
 */
export function signatureHeader(
  secrets: readonly string[],
  webhookId: string,
  timestampSeconds: number,
  body: string,
): string {
  const signed = `${webhookId}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
      return `v1,${createHmac('sha256', key).update(signed).digest('base64')}`;
    })
    .join(' ');
}

/** The body every delivery of `event` sends: `{type, timestamp, data}`, data the event as GET /v1/events/{id} returns it. */
export function deliveryPayload(event: AuditEvent): string {
  return JSON.stringify({ type: event.type, timestamp: event.occurred_at, data: event });
}

/** Whether an endpoint subscribed to `type`. */
export const subscribes = (endpoint: Pick<WebhookEndpoint, 'event_types'>, type: string) =>
  endpoint.event_types.includes('*') || endpoint.event_types.includes(type);

/** The secrets that sign now: the current one, and the previous one until it expires. */
export function signingSecrets(secrets: readonly StoredSecret[], now: Date): StoredSecret[] {
  return secrets.filter((s) => s.expires_at === null || Date.parse(s.expires_at) > now.getTime());
}

/**
 * The address rules at create and update (delivery checks them again on the connected address):
 * https only, but http to a URL naming a loopback host when `allowLoopback`; a host that is, or
 * resolves to, a loopback, private, link-local, CGNAT, multicast or unspecified address is
 * refused. A name that does not resolve now is accepted (its deliveries fail until it does).
 */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1']);
const ADDRESS_REFUSED =
  'url must point to a public address (not loopback, private, link-local, CGNAT, multicast or unspecified)';

/** How long a create or update waits for the URL's name to resolve (the API answers well within the gateway's timeout). */
const CHECK_LOOKUP_MS = 2_000;

export async function checkWebhookUrl(
  raw: string,
  options: { allowLoopback: boolean; lookup: OutboundLookup },
): Promise<void> {
  const url = new URL(raw);
  const host = bareHost(url.hostname);
  // Exactly these names (docs/WEBHOOKS.md#endpoints): 127.0.0.2, 0.0.0.0, … stay refused.
  const loopbackOk = options.allowLoopback && LOOPBACK_HOSTS.has(host);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopbackOk)) {
    throw badRequest(
      options.allowLoopback
        ? 'url must be https (http only to 127.0.0.1, localhost or [::1])'
        : 'url must be an https URL',
    );
  }
  if (loopbackOk) return;
  let addresses: readonly string[] | undefined;
  if (isIP(host)) addresses = [host];
  else {
    // A name that does not resolve (now, or within CHECK_LOOKUP_MS) is taken as it is: every attempt
    // checks the address it actually connects to, so this check only refuses what is refused already.
    const lookup = options.lookup(host).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const slow = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), CHECK_LOOKUP_MS);
    });
    addresses = await Promise.race([lookup, slow]).finally(() => clearTimeout(timer));
    if (!addresses) return;
  }
  for (const address of addresses) {
    // One message whatever the range: naming it would tell the caller what the name resolved to.
    if (addressRefusal(address)) throw badRequest(ADDRESS_REFUSED);
  }
}

/** What an attempt's failure is called in the delivery's attempts: the refusal's reason, or the HTTP status. */
export function attemptError(err: unknown): string {
  if (err instanceof OutboundRefused) return err.message.slice(0, 300);
  if (err instanceof Error && err.message === 'SECRET_UNREADABLE') return 'SECRET_UNREADABLE';
  return `UNREACHABLE: ${err instanceof Error ? err.message : String(err)}`.slice(0, 300);
}
