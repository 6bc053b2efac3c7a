import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  propagation,
  trace,
  type Context,
  type Link,
  type Span,
  type TextMapGetter,
  type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';

/**
 * Traces (OpenTelemetry), on only when OTEL_EXPORTER_OTLP_ENDPOINT is set. Instrumentation is
 * explicit, not by require hooks (the services are bundled by esbuild and run by tsx): a server
 * span per request (`traceRequest`), the W3C `traceparent` on every service-to-service call
 * (`injectTraceHeaders`), a producer span per AMQP message with the context in its headers
 * (`startPublishSpan`) and a consumer span per delivery (`startConsumeSpan`). An event carries the
 * trace and span id of the request that caused it (`currentTraceIds`, set by buildEvent), so an
 * event that waits in a batch, an outbox or a spool is still published in its request's trace.
 * Off, every function here returns at its first line.
 */

/** The settings tracing reads (commonConfigShape has them; config.ts reads the environment). */
export interface TracingConfig {
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_SERVICE_NAME?: string;
  OTEL_BSP_SCHEDULE_DELAY?: number;
}

export interface Tracing {
  readonly enabled: boolean;
  /** Exports every finished span now. */
  flush(): Promise<void>;
  /** Exports what is still buffered and, for the last user in the process, turns tracing off. */
  shutdown(): Promise<void>;
}

export interface TraceIds {
  trace_id: string;
  /** Only for a recorded (sampled) span: the parent its events' messages are published under. */
  span_id?: string;
}

const TRACER_NAME = '@mandate/shared';
let enabled = false;
let provider: BasicTracerProvider | undefined;
// Services started in one process (the embedded launcher, tests) share one provider.
let users = 0;

const OFF: Tracing = { enabled: false, flush: async () => undefined, shutdown: async () => undefined };

/** True while a tracer provider is installed in this process. */
export function tracingEnabled(): boolean {
  return enabled;
}

/** `<endpoint>/v1/traces`, as the OTLP specification derives it from OTEL_EXPORTER_OTLP_ENDPOINT. */
export function otlpTracesUrl(endpoint: string): string {
  return endpoint.replace(/\/+$/, '') + '/v1/traces';
}

/**
 * Installs the OTLP/HTTP (JSON) exporter behind a batch processor, the W3C trace-context
 * propagator and an AsyncLocalStorage context manager, when the endpoint is configured; otherwise
 * returns a no-op. service.name is OTEL_SERVICE_NAME or the service's name (for services sharing
 * one process, the first one started).
 */
export function startTracing(
  config: TracingConfig,
  serviceName: string,
  /** Instead of the OTLP exporter (a unit test's in-memory exporter; jest cannot run the OTLP one). */
  options: { exporter?: SpanExporter } = {},
): Tracing {
  const endpoint = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint && !options.exporter) return OFF;
  if (!provider) {
    const exporter = options.exporter ?? new OTLPTraceExporter({ url: otlpTracesUrl(endpoint!) });
    provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': config.OTEL_SERVICE_NAME ?? serviceName }),
      spanProcessors: [
        new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.OTEL_BSP_SCHEDULE_DELAY ?? 5000 }),
      ],
    });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
    enabled = true;
  }
  users++;
  let stopped = false;
  return {
    enabled: true,
    async flush() {
      await provider?.forceFlush();
    },
    async shutdown() {
      if (stopped) return;
      stopped = true;
      if (--users > 0) {
        await provider?.forceFlush();
        return;
      }
      const last = provider;
      provider = undefined;
      enabled = false;
      trace.disable();
      propagation.disable();
      context.disable();
      await last?.shutdown();
    },
  };
}

function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

const headerGetter: TextMapGetter<IncomingHttpHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

const TRACED = Symbol('traced');

/**
 * Runs one request's handling inside a SERVER span whose parent is the request's `traceparent`
 * (the client's at the gateway, the gateway's at a service). The span is named
 * `METHOD <route template>` from `route` (a string, or read when the answer is done) or from a
 * later `setRequestRoute`, and ends when the response closes. A request already traced (a fast
 * path that handed it to express) gets no second span.
 */
export function traceRequest<T>(
  req: IncomingMessage,
  res: ServerResponse,
  run: () => T,
  route?: string | (() => string | undefined),
): T {
  if (!enabled) return run();
  const marked = req as IncomingMessage & { [TRACED]?: true };
  if (marked[TRACED]) return run();
  marked[TRACED] = true;
  const parent = propagation.extract(ROOT_CONTEXT, req.headers, headerGetter);
  const method = req.method ?? 'GET';
  const known = typeof route === 'string' ? route : undefined;
  const span = tracer().startSpan(
    known ? `${method} ${known}` : method,
    {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': method, ...(known ? { 'http.route': known } : {}) },
    },
    parent,
  );
  res.once('close', () => {
    const late = typeof route === 'function' ? route() : undefined;
    if (late) {
      span.updateName(`${method} ${late}`);
      span.setAttribute('http.route', late);
    }
    span.setAttribute('http.response.status_code', res.statusCode);
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    if (!res.writableFinished) span.setAttribute('error.type', 'aborted');
    span.end();
  });
  return context.with(trace.setSpan(parent, span), run);
}

/** Names the current request's span after its route template, once routing has matched one. */
export function setRequestRoute(method: string | undefined, route: string): void {
  if (!enabled) return;
  const span = trace.getActiveSpan();
  if (!span) return;
  span.updateName(`${method ?? 'GET'} ${route}`);
  span.setAttribute('http.route', route);
}

/** Adds the attributes to the current span (e.g. the tenant, known after authentication). */
export function setSpanAttributes(attributes: Record<string, string | number | boolean>): void {
  if (!enabled) return;
  trace.getActiveSpan()?.setAttributes(attributes);
}

/** Adds `traceparent` (and `tracestate`) of the active context to outgoing request headers; returns them. */
export function injectTraceHeaders<H extends Record<string, string>>(headers: H): H {
  if (!enabled) return headers;
  propagation.inject(context.active(), headers);
  return headers;
}

/** The trace and span id of the active span, for log lines and audit events; undefined when off or outside a trace. */
export function currentTraceIds(): TraceIds | undefined {
  if (!enabled) return undefined;
  const span = trace.getActiveSpan();
  if (!span) return undefined;
  const ctx = span.spanContext();
  if (!trace.isSpanContextValid(ctx)) return undefined;
  // A request whose caller said "not sampled" keeps its trace id (logs, events) but records no spans downstream.
  return ctx.traceFlags & TraceFlags.SAMPLED
    ? { trace_id: ctx.traceId, span_id: ctx.spanId }
    : { trace_id: ctx.traceId };
}

/** The remote context an event was built in (its trace_id and span_id), as a parent for a producer span. */
function eventContext(ids: Partial<TraceIds>): Context | undefined {
  if (!ids.trace_id || !ids.span_id) return undefined;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: ids.trace_id,
    spanId: ids.span_id,
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });
}

/** Links kept on a producer span whose message carries events of several traces. */
const MAX_LINKS = 32;

export interface MessageSpan {
  span: Span;
  /** `traceparent` (and `tracestate`) of the producer span, for the message's headers. */
  headers: Record<string, string>;
}

/**
 * A PRODUCER span for one AMQP message. Its parent is the context of the message's first event
 * that has one (the request that caused it, even if the event waited in an outbox), else the
 * active context (work outside any request, e.g. a sweeper); other events' traces become links.
 * Undefined when tracing is off, or when the message's first traced event comes from an unsampled
 * request (a trace id without a span id): that request is not recorded anywhere.
 */
export function startPublishSpan(
  events: readonly Partial<TraceIds>[],
  exchange: string,
  routingKey: string,
  messageId: string,
): MessageSpan | undefined {
  if (!enabled) return undefined;
  let parent: Context | undefined;
  const links: Link[] = [];
  const seen = new Set<string>();
  for (const event of events) {
    if (!parent && event.trace_id && !event.span_id) return undefined;
    const ctx = eventContext(event);
    if (!ctx || seen.has(event.trace_id!)) continue;
    seen.add(event.trace_id!);
    if (!parent) parent = ctx;
    else if (links.length < MAX_LINKS) links.push({ context: trace.getSpanContext(ctx)! });
  }
  parent ??= context.active();
  const span = tracer().startSpan(
    `publish ${exchange}`,
    {
      kind: SpanKind.PRODUCER,
      links,
      attributes: {
        'messaging.system': 'rabbitmq',
        'messaging.operation.type': 'send',
        'messaging.destination.name': exchange,
        'messaging.rabbitmq.destination.routing_key': routingKey,
        'messaging.message.id': messageId,
        'messaging.batch.message_count': events.length,
      },
    },
    parent,
  );
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(parent, span), headers);
  return { span, headers };
}

/**
 * A CONSUMER span for one delivery, the child of the producer span named by the message's
 * `traceparent` header. Undefined when tracing is off or the message has no traceparent (its
 * producer traced nothing: tracing off there, or an unsampled request).
 */
export function startConsumeSpan(
  headers: Record<string, unknown> | undefined,
  queue: string,
  messageId: unknown,
  eventCount: number,
): Span | undefined {
  if (!enabled) return undefined;
  const carrier: Record<string, string> = {};
  for (const key of ['traceparent', 'tracestate']) {
    const value = headers?.[key];
    if (typeof value === 'string') carrier[key] = value;
    else if (Buffer.isBuffer(value)) carrier[key] = value.toString('latin1');
  }
  if (carrier.traceparent === undefined) return undefined;
  const parent = propagation.extract(ROOT_CONTEXT, carrier);
  return tracer().startSpan(
    `process ${queue}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'rabbitmq',
        'messaging.operation.type': 'process',
        'messaging.destination.name': queue,
        ...(typeof messageId === 'string' ? { 'messaging.message.id': messageId } : {}),
        'messaging.batch.message_count': eventCount,
      },
    },
    parent,
  );
}

/** Ends a span, marking it failed when `error` is given. */
export function endSpan(span: Span | undefined, error?: unknown): void {
  if (!span) return;
  if (error !== undefined) {
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message : String(error),
    });
  }
  span.end();
}
