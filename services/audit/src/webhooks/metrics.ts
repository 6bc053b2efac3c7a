import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { processMetrics } from '@mandate/shared/observability';

/** What the backlog gauges ask on scrape (a store's PENDING deliveries). */
export interface WebhookBacklogSource {
  backlog(): Promise<{ pending: number; oldestCreatedAt: string | null }>;
}

export interface WebhookMetrics {
  /** Attempts by outcome: succeeded, retrying (failed, another attempt scheduled), failed (schedule exhausted), skipped (endpoint disabled or deleted). */
  attempts: Counter<'outcome'>;
  attemptSeconds: Histogram;
  backlogSources: Set<WebhookBacklogSource>;
}

const byRegistry = new WeakMap<Registry, WebhookMetrics>();

/** The webhook metrics of this process's registry, registered once (the embedded mode runs one audit). */
export function webhookMetrics(registry: Registry = processMetrics().registry): WebhookMetrics {
  const known = byRegistry.get(registry);
  if (known) return known;
  const backlogSources = new Set<WebhookBacklogSource>();
  const backlogs = async () => {
    const all = await Promise.all([...backlogSources].map((s) => s.backlog().catch(() => null)));
    return all.filter((b) => b !== null);
  };
  new Gauge({
    name: 'webhook_backlog_deliveries',
    help: 'Webhook deliveries PENDING (due now or waiting for a retry), asked of the store on scrape',
    registers: [registry],
    async collect() {
      const all = await backlogs();
      if (all.length === 0) this.reset();
      else this.set(all.reduce((n, b) => n + b.pending, 0));
    },
  });
  new Gauge({
    name: 'webhook_oldest_pending_age_seconds',
    help: 'Age of the oldest PENDING webhook delivery (since its event was fanned out); 0 when none',
    registers: [registry],
    async collect() {
      let oldest: number | null = null;
      for (const b of await backlogs()) {
        const t = b.oldestCreatedAt ? Date.parse(b.oldestCreatedAt) : NaN;
        if (!Number.isNaN(t) && (oldest === null || t < oldest)) oldest = t;
      }
      this.set(oldest === null ? 0 : Math.max(0, (Date.now() - oldest) / 1000));
    },
  });
  const metrics: WebhookMetrics = {
    attempts: new Counter({
      name: 'webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome: succeeded, retrying (failed, retry scheduled), failed (schedule exhausted), skipped (endpoint disabled or deleted)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    attemptSeconds: new Histogram({
      name: 'webhook_attempt_duration_seconds',
      help: 'Webhook attempt latency, from connect to the end of the (capped) answer',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    backlogSources,
  };
  byRegistry.set(registry, metrics);
  return metrics;
}
