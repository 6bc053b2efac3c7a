import { type Clock } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { buildEvent, type EventRelay } from '@mandate/shared/events';
import { OutboundPool, safeFetch, type OutboundLookup } from '@mandate/shared/http';
import { webhookMetrics } from './metrics';
import type { SecretBox } from './secret-box';
import {
  attemptError,
  nextAttemptAt,
  signatureHeader,
  signingSecrets,
  type ClaimedDelivery,
  type WebhookAttempt,
  type WebhookDelivery,
  type WebhookEndpoint,
} from './webhook';
import type { AttemptOutcome, WebhookStore } from './webhook-store';

export interface WebhookSettings {
  /** http to a URL naming 127.0.0.1 / localhost is allowed (local development only). */
  allowLoopback: boolean;
  /** Resolves receivers' host names (tests stub it); the system resolver by default. */
  lookup?: OutboundLookup;
  /** One attempt, connect to last byte. */
  timeoutMs: number;
  /** Delay after each failed attempt, seconds; exhausted → FAILED. */
  retryScheduleSeconds: readonly number[];
  /** An endpoint whose every attempt failed for this long is DISABLED. */
  disableAfterMs: number;
  /** Deliveries in flight per process. */
  concurrency: number;
  /** How often the store is asked for due deliveries without a kick (retries, other processes' fan-out). */
  pollMs: number;
}

/** Bytes of a receiver's answer kept with the attempt. */
export const RESPONSE_BODY_LIMIT = 1024;

/**
 * Delivers what is due: leases deliveries in the store (a guarded write, so two processes never
 * hold the same one), POSTs each signed to its endpoint under the outbound address rules, and
 * records the attempt with the lease token (a worker whose lease ran out writes nothing). A
 * process killed mid-attempt leaves a lease that runs out: another process sends the same
 * delivery again, with the same webhook-id (at least once). Scales by adding processes.
 */
export class DeliveryWorker {
  private timer?: NodeJS.Timeout;
  private started = false;
  private pumping = false;
  private again = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly metrics = webhookMetrics();
  /** Connections kept per receiver between attempts (each new one checked on connect). */
  private readonly pool = new OutboundPool();
  /** Opened secrets by their sealed form: opening costs a decipher per attempt otherwise. */
  private readonly opened = new Map<string, string>();

  constructor(
    private readonly deps: {
      store: WebhookStore;
      box: SecretBox;
      relay: EventRelay;
      clock: Clock;
      logger: Logger;
      settings: WebhookSettings;
      random?: () => number;
    },
  ) {}

  /** How long a lease lasts: the attempt's timeout and a margin; a crashed worker's deliveries wait this long at most. */
  get leaseMs(): number {
    return this.deps.settings.timeoutMs + 5_000;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.metrics.backlogSources.add(this.deps.store);
    const tick = () => {
      this.kick();
      this.timer = setTimeout(tick, this.deps.settings.pollMs);
      this.timer.unref();
    };
    tick();
  }

  /** New deliveries were stored (or a lease freed): claim now rather than at the next poll. */
  kick(): void {
    if (!this.started) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      do {
        this.again = false;
        while (this.started && this.inFlight.size < this.deps.settings.concurrency) {
          const room = this.deps.settings.concurrency - this.inFlight.size;
          const claimed = await this.claim(room);
          if (claimed.length === 0) break;
          const endpoints = await this.endpointsOf(claimed);
          for (const d of claimed) {
            const p: Promise<void> = this.attempt(d, endpoints.get(d.endpoint_id), false)
              .then(() => undefined)
              .catch((err) =>
                this.deps.logger.error({ err, deliveryId: d.id }, 'webhook attempt failed to record'),
              )
              .finally(() => {
                this.inFlight.delete(p);
                this.kick();
              });
            this.inFlight.add(p);
          }
        }
      } while (this.again && this.started);
    } catch (err) {
      this.deps.logger.warn({ err }, 'webhook worker cannot claim deliveries; retrying at the next poll');
    } finally {
      this.pumping = false;
    }
  }

  private claim(limit: number): Promise<ClaimedDelivery[]> {
    const now = this.deps.clock.now();
    return this.deps.store.claimDue(now, new Date(now.getTime() + this.leaseMs), limit);
  }

  private async endpointsOf(deliveries: readonly ClaimedDelivery[]): Promise<Map<string, WebhookEndpoint>> {
    const ids = [...new Set(deliveries.map((d) => d.endpoint_id))];
    return new Map((await this.deps.store.endpointsByIds(ids)).map((e) => [e.id, e]));
  }

  /**
   * Tests under an injected clock: attempts everything due now, one round at a time, until
   * nothing is due. Answers how many attempts were made.
   */
  async runDue(): Promise<number> {
    let made = 0;
    for (;;) {
      const claimed = await this.claim(this.deps.settings.concurrency);
      if (claimed.length === 0) return made;
      const endpoints = await this.endpointsOf(claimed);
      await Promise.all(claimed.map((d) => this.attempt(d, endpoints.get(d.endpoint_id), false)));
      made += claimed.length;
    }
  }

  /**
   * An attempt the API asked for, of a delivery the caller has leased: a manual retry (outside the
   * schedule) or a test event's first attempt (`manual` false: its schedule starts here). Answers
   * the delivery after it, or null when the lease was lost meanwhile.
   */
  async attemptNow(
    claimed: ClaimedDelivery,
    endpoint: WebhookEndpoint,
    manual = true,
  ): Promise<WebhookDelivery | null> {
    return this.attempt(claimed, endpoint, manual);
  }

  private async attempt(
    d: ClaimedDelivery,
    endpoint: WebhookEndpoint | undefined,
    manual: boolean,
  ): Promise<WebhookDelivery | null> {
    const { store, clock } = this.deps;
    const startedAt = clock.now();
    if (!endpoint || (endpoint.status !== 'ENABLED' && !manual))
      return this.skip(d, endpoint, manual, startedAt);
    const { attempt, ok } = await this.send(d, endpoint, manual, startedAt);
    const finishedAt = clock.now();
    const outcome = this.outcome(d, attempt, ok, manual, finishedAt);
    this.metrics.attempts.inc({
      outcome: ok ? 'succeeded' : outcome.status === 'FAILED' ? 'failed' : 'retrying',
    });
    const recorded = await store.finishAttempt(d, outcome, finishedAt.toISOString());
    if (!recorded) {
      this.deps.logger.warn(
        { deliveryId: d.id },
        'webhook lease ran out during the attempt; another worker owns it now',
      );
      return null;
    }
    await this.trackHealth(endpoint, ok, finishedAt).catch((err) =>
      this.deps.logger.warn({ err, endpointId: endpoint.id }, 'webhook endpoint health not recorded'),
    );
    return recorded;
  }

  /** Deleted or disabled since the fan-out: nothing is sent; a retry after re-enabling sends it. */
  private skip(
    d: ClaimedDelivery,
    endpoint: WebhookEndpoint | undefined,
    manual: boolean,
    startedAt: Date,
  ): Promise<WebhookDelivery | null> {
    this.metrics.attempts.inc({ outcome: 'skipped' });
    return this.deps.store.finishAttempt(
      d,
      {
        attempt: {
          attempted_at: startedAt.toISOString(),
          status_code: null,
          error: endpoint ? 'ENDPOINT_DISABLED' : 'ENDPOINT_DELETED',
          duration_ms: 0,
          response_body: null,
          manual,
        },
        status: 'FAILED',
        next_attempt_at: null,
        scheduled: false,
      },
      startedAt.toISOString(),
    );
  }

  /** One signed POST of the delivery (timed in the metric); what it answered, or why it failed, as the attempt. */
  private async send(
    d: ClaimedDelivery,
    endpoint: WebhookEndpoint,
    manual: boolean,
    startedAt: Date,
  ): Promise<{ attempt: WebhookAttempt; ok: boolean }> {
    const { settings } = this.deps;
    const timestamp = Math.floor(startedAt.getTime() / 1000);
    const secrets = this.openSecrets(endpoint, startedAt);
    const started = performance.now();
    try {
      // Sealed under another INTERNAL_TOKEN_SECRET: nothing unsigned is ever sent.
      if (secrets.length === 0) throw new Error('SECRET_UNREADABLE');
      const res = await safeFetch(endpoint.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'mandate-webhooks/1',
          'webhook-id': d.event_id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(secrets, d.event_id, timestamp, d.payload),
        },
        body: d.payload,
        timeoutMs: settings.timeoutMs,
        maxBytes: RESPONSE_BODY_LIMIT,
        overflow: 'truncate',
        allowLoopback: settings.allowLoopback,
        lookup: settings.lookup,
        pool: this.pool,
      });
      const ok = res.status >= 200 && res.status < 300;
      const attempt = {
        attempted_at: startedAt.toISOString(),
        status_code: res.status,
        error: ok ? null : `HTTP ${res.status}`,
        duration_ms: Math.round(performance.now() - started),
        response_body: res.body.length > 0 ? res.body.toString('utf8') : null,
        manual,
      };
      return { attempt, ok };
    } catch (err) {
      const attempt = {
        attempted_at: startedAt.toISOString(),
        status_code: null,
        error: attemptError(err),
        duration_ms: Math.round(performance.now() - started),
        response_body: null,
        manual,
      };
      return { attempt, ok: false };
    } finally {
      this.metrics.attemptSeconds.observe((performance.now() - started) / 1000);
    }
  }

  /** The secrets that sign now, opened; one sealed under another key is left out (and logged). */
  private openSecrets(endpoint: WebhookEndpoint, now: Date): string[] {
    const opened: string[] = [];
    for (const s of signingSecrets(endpoint.secrets, now)) {
      try {
        let secret = this.opened.get(s.sealed);
        if (secret === undefined) {
          secret = this.deps.box.open(s.sealed);
          if (this.opened.size >= 10_000) this.opened.clear();
          this.opened.set(s.sealed, secret);
        }
        opened.push(secret);
      } catch {
        this.deps.logger.error(
          { endpointId: endpoint.id },
          'webhook secret cannot be opened (INTERNAL_TOKEN_SECRET changed?); rotate the endpoint secret',
        );
      }
    }
    return opened;
  }

  private outcome(
    d: WebhookDelivery,
    attempt: WebhookAttempt,
    ok: boolean,
    manual: boolean,
    now: Date,
  ): AttemptOutcome {
    if (ok) return { attempt, status: 'SUCCEEDED', next_attempt_at: null, scheduled: !manual };
    // A manual attempt that fails changes nothing: a PENDING delivery keeps its next attempt, a FAILED or SUCCEEDED one its status.
    if (manual) {
      return { attempt, status: d.status, next_attempt_at: d.next_attempt_at, scheduled: false };
    }
    const next = nextAttemptAt(
      now,
      d.scheduled_attempts + 1,
      this.deps.settings.retryScheduleSeconds,
      this.deps.random,
    );
    return {
      attempt,
      status: next ? 'PENDING' : 'FAILED',
      next_attempt_at: next ? next.toISOString() : null,
      scheduled: true,
    };
  }

  /**
   * The endpoint's failing state: set at its first failure, cleared by a success; an endpoint still
   * failing after disableAfterMs is DISABLED, with WEBHOOK_ENDPOINT_DISABLED. Guarded by the
   * version read with the claim: a change meanwhile wins, and the next attempt looks again.
   */
  private async trackHealth(endpoint: WebhookEndpoint, ok: boolean, now: Date): Promise<void> {
    const { store, relay, settings } = this.deps;
    const at = now.toISOString();
    if (ok) {
      if (endpoint.failing_since !== null)
        await store.updateEndpoint(endpoint, { failing_since: null }, at, []);
      return;
    }
    if (endpoint.failing_since === null) {
      await store.updateEndpoint(endpoint, { failing_since: at }, at, []);
      return;
    }
    if (endpoint.status !== 'ENABLED') return;
    const failingMs = now.getTime() - Date.parse(endpoint.failing_since);
    if (failingMs < settings.disableAfterMs) return;
    const event = buildEvent({
      type: 'WEBHOOK_ENDPOINT_DISABLED',
      tenantId: endpoint.tenant_id,
      resource: { type: 'webhook_endpoint', id: endpoint.id },
      data: {
        endpoint_id: endpoint.id,
        url: endpoint.url,
        reason: 'failing',
        failing_since: endpoint.failing_since,
      },
      occurredAt: now,
    });
    const disabled = await store.updateEndpoint(
      endpoint,
      { status: 'DISABLED', disabled_reason: 'failing' },
      at,
      [event],
    );
    if (disabled) {
      this.deps.logger.warn(
        { endpointId: endpoint.id, tenantId: endpoint.tenant_id, failingSince: endpoint.failing_since },
        'webhook endpoint disabled after failing for too long',
      );
      await relay.publishNow([event]);
    }
  }

  async stop(): Promise<void> {
    this.started = false;
    this.metrics.backlogSources.delete(this.deps.store);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    this.opened.clear();
    await this.pool.close();
  }
}
