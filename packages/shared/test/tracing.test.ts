import { createServer, type Server } from 'node:http';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { traceRequest } from '../src/observability';
import {
  currentTraceIds,
  endSpan,
  injectTraceHeaders,
  startConsumeSpan,
  startPublishSpan,
  startTracing,
  tracingEnabled,
} from '../src/observability/tracing';
import { type AuditEvent } from '../src/events';
import { anyEvent, closeServer, listenOn } from '../src/testing';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const UNSAMPLED_TRACE = '0af7651916cd43dd8448eb211c80319c';

/** An app whose one handler builds an event inside the request's span. */
function appBuildingEvents(built: AuditEvent[]): Server {
  return createServer((req, res) =>
    traceRequest(
      req,
      res,
      () => {
        built.push(anyEvent({ type: 'API_CALL', tenantId: 'tnt_1', resource: null, data: {} }));
        res.end('ok');
      },
      '/v1/things/:id',
    ),
  );
}

describe('tracing', () => {
  it('when OTEL_EXPORTER_OTLP_ENDPOINT is not set, then nothing is traced: no trace ids on events, no headers added, no spans', async () => {
    const tracing = startTracing({}, 'test');
    expect(tracing.enabled).toBe(false);
    expect(tracingEnabled()).toBe(false);
    const built: AuditEvent[] = [];
    const app = appBuildingEvents(built);
    const url = await listenOn(app);
    try {
      await fetch(`${url}/v1/things/1`, { headers: { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` } });
    } finally {
      await closeServer(app);
    }
    expect(built).toHaveLength(1);
    expect(Object.keys(built[0]!)).not.toContain('trace_id');
    expect(currentTraceIds()).toBeUndefined();
    expect(injectTraceHeaders({ a: '1' })).toEqual({ a: '1' });
    expect(startPublishSpan(built, 'x.events', 'audit.API_CALL', built[0]!.id)).toBeUndefined();
    expect(startConsumeSpan({}, 'x.audit.events', 'm', 1)).toBeUndefined();
    await tracing.shutdown();
  });

  it('when on, then a request continues the caller trace, its events carry the trace and span ids, and a message published from them is the parent of its consumer span', async () => {
    const exporter = new InMemorySpanExporter();
    const tracing = startTracing({}, 'test', { exporter });
    const built: AuditEvent[] = [];
    const app = appBuildingEvents(built);
    const url = await listenOn(app);
    let spans: ReadableSpan[];
    try {
      expect(tracingEnabled()).toBe(true);
      await fetch(`${url}/v1/things/1`, { headers: { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` } });
      const event = built[0]!;
      expect(event.trace_id).toBe(TRACE_ID);
      expect(event.span_id).toMatch(/^[0-9a-f]{16}$/);

      const message = startPublishSpan([event], 'x.events', 'audit.API_CALL', event.id)!;
      expect(message.headers.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
      endSpan(message.span);
      // amqplib hands header values back as strings or Buffers.
      const consumer = startConsumeSpan(
        { traceparent: Buffer.from(message.headers.traceparent!) },
        'x.audit.events',
        event.id,
        1,
      )!;
      endSpan(consumer);

      // A caller that says "not sampled": its trace id travels, nothing downstream is recorded.
      await fetch(`${url}/v1/things/2`, {
        headers: { traceparent: `00-${UNSAMPLED_TRACE}-${CLIENT_SPAN}-00` },
      });
      expect(built[1]).toMatchObject({ trace_id: UNSAMPLED_TRACE });
      expect(built[1]!.span_id).toBeUndefined();
      expect(startPublishSpan([built[1]!], 'x.events', 'audit.API_CALL', built[1]!.id)).toBeUndefined();
      expect(startConsumeSpan({}, 'x.audit.events', built[1]!.id, 1)).toBeUndefined();

      await tracing.flush();
      spans = exporter.getFinishedSpans();
      expect(spans.filter((s) => s.spanContext().traceId === UNSAMPLED_TRACE)).toEqual([]);
    } finally {
      await closeServer(app);
      await tracing.shutdown();
    }
    expect(tracingEnabled()).toBe(false);
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    const ids = (s: ReadableSpan) => ({
      traceId: s.spanContext().traceId,
      spanId: s.spanContext().spanId,
      parent: s.parentSpanContext?.spanId,
      kind: s.kind,
    });
    const server = ids(byName('GET /v1/things/:id'));
    const producer = ids(byName('publish x.events'));
    const consumer = ids(byName('process x.audit.events'));
    expect(server).toMatchObject({ traceId: TRACE_ID, parent: CLIENT_SPAN, kind: SpanKind.SERVER });
    expect(server.spanId).toBe(built[0]!.span_id);
    expect(producer).toMatchObject({ traceId: TRACE_ID, parent: server.spanId, kind: SpanKind.PRODUCER });
    expect(consumer).toMatchObject({ traceId: TRACE_ID, parent: producer.spanId, kind: SpanKind.CONSUMER });
    expect(byName('GET /v1/things/:id').attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/v1/things/:id',
      'http.response.status_code': 200,
    });
  });
});
