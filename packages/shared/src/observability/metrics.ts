import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const HEADERS_SENT_AT = Symbol('headersSentAt');
type HeldResponse = ServerResponse & { [HEADERS_SENT_AT]?: number };

/**
 * Marks an answer held open (identity's credential feed, ended after a minute): its request's
 * duration in http_request_duration_seconds is the time to its headers, so a feed does not read as
 * a minute-long request in the service's latency.
 */
export function timeToHeaders(res: ServerResponse): void {
  (res as HeldResponse)[HEADERS_SENT_AT] = performance.now();
}

/** Seconds buckets for request and KMS latencies: sub-millisecond verify answers up to a 10 s timeout. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What the outbox relay saw pending on its last read (it reads every poll, so scrapes cost no query). */
export interface OutboxBacklogSource {
  /** Events pending (capped at the relay's batch size) and the occurred_at of the oldest, ms since epoch. */
  backlog(): { events: number; oldestMs: number | null };
}

/** A queue consumer that can tell how many messages wait in its queue (null: not connected). */
export interface QueueDepthSource {
  queueDepth(): Promise<number | null>;
}

/** A spool's bytes on disk. */
export interface SpoolSizeSource {
  pendingBytes(): number;
}

/** One label set of a FastHistogram: per-bucket counts (not cumulative), their count and sum. */
interface HistogramSeries {
  labels: Record<string, string>;
  buckets: Float64Array;
  count: number;
  sum: number;
}

/**
 * Registers a metric whose values are computed on scrape: a registry takes any object with
 * `name`, `help`, `type` and `get()`, and prom-client formats what `get()` answers.
 */
function registerComputed(
  registry: Registry,
  meta: { name: string; help: string },
  type: 'counter' | 'histogram',
  values: () => object[],
): void {
  registry.registerMetric({
    ...meta,
    type,
    get: async () => ({ ...meta, type, aggregator: 'sum', values: values() }),
  } as never);
}

/**
 * A histogram (and the counter of its observations) for the request paths: prom-client's
 * children hash and validate their labels on every call, this finds its series by a key the
 * caller builds and adds two numbers and a bucket count. prom-client formats it on scrape
 * (a registry takes any object with `name`, `help`, `type` and `get()`).
 */
export class FastHistogram {
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    private readonly bounds: readonly number[],
    registry: Registry,
    histogram: { name: string; help: string },
    counter?: { name: string; help: string },
  ) {
    registerComputed(registry, histogram, 'histogram', () => this.histogramValues(histogram.name));
    if (counter)
      registerComputed(registry, counter, 'counter', () =>
        [...this.series.values()].map((s) => ({ labels: s.labels, value: s.count })),
      );
  }

  /** Adds one observation to the series `key`; `labels()` is called only the first time the key is seen. */
  observe(key: string, labels: () => Record<string, string>, value: number): void {
    let s = this.series.get(key);
    if (!s) {
      s = { labels: labels(), buckets: new Float64Array(this.bounds.length), count: 0, sum: 0 };
      this.series.set(key, s);
    }
    s.count++;
    s.sum += value;
    const { bounds } = this;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        s.buckets[i]!++;
        break;
      }
    }
  }

  private histogramValues(name: string) {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.buckets[i]!;
        values.push({
          metricName: `${name}_bucket`,
          labels: { ...s.labels, le: this.bounds[i]! },
          value: cumulative,
        });
      }
      values.push({ metricName: `${name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
      values.push({ metricName: `${name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${name}_count`, labels: s.labels, value: s.count });
    }
    return values;
  }
}

/** A counter for the request paths, on the same terms as FastHistogram. */
export class FastCounter {
  private readonly series = new Map<string, { labels: Record<string, string>; value: number }>();

  constructor(registry: Registry, counter: { name: string; help: string }) {
    registerComputed(registry, counter, 'counter', () => [...this.series.values()]);
  }

  inc(key: string, labels: () => Record<string, string>): void {
    let s = this.series.get(key);
    if (!s) {
      s = { labels: labels(), value: 0 };
      this.series.set(key, s);
    }
    s.value++;
  }
}

/**
 * The Prometheus metrics of one process, in a registry of its own (never prom-client's global one:
 * the embedded mode runs five services in one process, and a jest worker builds many apps). One
 * registry per process, not per app, because the adapters that count (limiter, spool, relay, KMS
 * signer, audit consumer) are built by each service's wiring, before and apart from its app; the
 * `service` label on the HTTP metrics keeps the services of the embedded mode apart.
 */
export class ProcessMetrics {
  readonly registry = new Registry();
  /** http_request_duration_seconds and http_requests_total (its count per label set). */
  readonly http: FastHistogram;
  readonly verifyDecisions: FastCounter;
  readonly rateLimitRejections: Counter<'bucket'>;
  readonly rateLimitRedisFallbacks: Counter;
  readonly auditBatchSize: Histogram;
  readonly auditDeadLetters: Counter<'kind'>;
  readonly kmsDuration: Histogram<'operation'>;
  readonly kmsErrors: Counter<'operation'>;
  /** occurred_at (ms) of the newest event audit stored last; null until the first batch. */
  auditLastOccurredMs: number | null = null;
  readonly outboxSources = new Set<OutboxBacklogSource>();
  readonly spoolSources = new Set<SpoolSizeSource>();
  readonly queueSources = new Set<QueueDepthSource>();

  constructor() {
    const registers = [this.registry];
    // A counter in this process's registry, by the given labels.
    const counter = <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Counter<L>({ name, help, labelNames, registers });
    // The event-loop delay histogram samples with a timer: at prom-client's 10 ms every process woke
    // ~100 times a second for it, idle or not, half of an idle service's CPU (bench/idle-cost.ts,
    // docs/PERFORMANCE.md round 10). At 100 ms a stall of 100 ms or more is always seen, a shorter
    // one with a chance of its length in 100 ms.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 100 });
    this.http = new FastHistogram(
      LATENCY_BUCKETS,
      this.registry,
      {
        name: 'http_request_duration_seconds',
        help: 'HTTP request latency until the answer is written, by service, method, route pattern and status',
      },
      {
        name: 'http_requests_total',
        help: 'HTTP requests answered, by service, method, route pattern and status',
      },
    );
    this.verifyDecisions = new FastCounter(this.registry, {
      name: 'verify_decisions_total',
      help: 'Verify decisions, by decision (ALLOW/DENY) and reason',
    });
    this.rateLimitRejections = counter(
      'rate_limit_rejections_total',
      'Requests refused 429 by the gateway limiter, by bucket',
      ['bucket'],
    );
    this.rateLimitRedisFallbacks = counter(
      'rate_limit_redis_fallbacks_total',
      'Limiter decisions taken in process because Redis was unavailable',
    );
    // Registered here, in this order: the order /metrics lists them in.
    this.registerBacklogGauges(registers);
    this.registerAuditGauges(registers);
    this.auditBatchSize = new Histogram({
      name: 'audit_batch_size',
      help: 'Events per batch written by the audit consumer',
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500],
      registers,
    });
    this.auditDeadLetters = counter(
      'audit_dead_letters_total',
      'Audit messages (kind=message) or invalid events of a batch message (kind=event) dead-lettered',
      ['kind'],
    );
    this.kmsDuration = new Histogram({
      name: 'kms_request_duration_seconds',
      help: 'AWS KMS call latency, by operation',
      labelNames: ['operation'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.kmsErrors = counter('kms_errors_total', 'AWS KMS calls that failed, by operation', ['operation']);
  }

  /** The gauges of what waits to be sent: the outbox's backlog and the event spool, read on scrape. */
  private registerBacklogGauges(registers: Registry[]): void {
    const outboxSources = this.outboxSources;
    new Gauge({
      name: 'outbox_backlog_events',
      help: 'Events waiting in the outbox at the relay’s last read (capped at its batch size)',
      registers,
      collect() {
        let events = 0;
        for (const s of outboxSources) events += s.backlog().events;
        this.set(events);
      },
    });
    new Gauge({
      name: 'outbox_oldest_event_age_seconds',
      help: 'Age of the oldest event waiting in the outbox at the relay’s last read; 0 when empty',
      registers,
      collect() {
        let oldest: number | null = null;
        for (const s of outboxSources) {
          const o = s.backlog().oldestMs;
          if (o !== null && (oldest === null || o < oldest)) oldest = o;
        }
        this.set(oldest === null ? 0 : Math.max(0, (Date.now() - oldest) / 1000));
      },
    });
    const spoolSources = this.spoolSources;
    new Gauge({
      name: 'event_spool_bytes',
      help: 'Bytes of events spooled on disk while the broker is unavailable',
      registers,
      collect() {
        let bytes = 0;
        for (const s of spoolSources) bytes += s.pendingBytes();
        this.set(bytes);
      },
    });
  }

  /** The audit consumer's lag and its queue's depth, read on scrape. */
  private registerAuditGauges(registers: Registry[]): void {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- read inside prom-client's collect(), where `this` is the gauge
    const self = this;
    new Gauge({
      name: 'audit_consumer_lag_seconds',
      help: 'Now minus occurred_at of the newest event in the last batch audit stored',
      registers,
      collect() {
        if (self.auditLastOccurredMs !== null)
          this.set(Math.max(0, (Date.now() - self.auditLastOccurredMs) / 1000));
      },
    });
    const queueSources = this.queueSources;
    new Gauge({
      name: 'audit_queue_messages',
      help: 'Messages ready in the audit queue, not yet delivered to a consumer (asked of RabbitMQ on scrape)',
      registers,
      async collect() {
        let total: number | null = null;
        for (const s of queueSources) {
          const depth = await s.queueDepth().catch(() => null);
          if (depth !== null) total = (total ?? 0) + depth;
        }
        // Not connected: no sample, rather than a 0 that reads as "caught up".
        if (total === null) this.reset();
        else this.set(total);
      },
    });
  }

  /** Counts one answered request; `route` is the route pattern (bounded), never the raw path. */
  observeHttp(service: string, method: string, route: string, status: number, seconds: number): void {
    this.http.observe(
      `${service} ${method} ${status} ${route}`,
      () => ({ service, method, route, status: String(status) }),
      seconds,
    );
  }

  /** Counts one verify decision; reasons are a fixed set, so the series are few. */
  countVerifyDecision(decision: string, reason: string): void {
    this.verifyDecisions.inc(`${decision} ${reason}`, () => ({ decision, reason }));
  }

  /**
   * Times the response of a plain node:http request; `route()` is read when the answer is finished.
   * An answer held open (`timeToHeaders`) is timed to its headers.
   */
  timeResponse(service: string, req: IncomingMessage, res: ServerResponse, route: () => string): void {
    const started = performance.now();
    // `finish` fires once; `on` spares the wrapper `once` makes per request.
    res.on('finish', () =>
      this.observeHttp(
        service,
        req.method ?? '',
        route(),
        res.statusCode,
        (((res as HeldResponse)[HEADERS_SENT_AT] ?? performance.now()) - started) / 1000,
      ),
    );
  }

  /** Times a KMS call: latency always, an error counted when it throws. */
  async timeKms<T>(operation: string, call: () => Promise<T>): Promise<T> {
    const end = this.kmsDuration.startTimer({ operation });
    try {
      return await call();
    } catch (err) {
      this.kmsErrors.inc({ operation });
      throw err;
    } finally {
      end();
    }
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

let current: ProcessMetrics | undefined;

/** The metrics of this process, made on first use. */
export function processMetrics(): ProcessMetrics {
  return (current ??= new ProcessMetrics());
}

/** Answers a scrape on a plain node:http response. */
export function serveMetrics(res: ServerResponse): void {
  processMetrics()
    .scrape()
    .then(
      ({ contentType, body }) => {
        res.statusCode = 200;
        res.setHeader('Content-Type', contentType);
        res.end(body);
      },
      (err: unknown) => {
        res.statusCode = 500;
        res.setHeader('Content-Type', 'text/plain; charset=utf-8');
        res.end(`metrics collection failed: ${err instanceof Error ? err.message : String(err)}\n`);
      },
    );
}
