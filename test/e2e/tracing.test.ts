import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import type { AuditEvent } from '@mandate/shared/events';
import { closeServer, listenOn } from '@mandate/shared/testing';
import { apiClient, createTenant, eventually, startStack, type Stack } from '../support/stack';

/** One span as the OTLP/HTTP JSON exporter sends it, with its process's service.name. */
interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

const SPAN_KIND = { SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}

const valueOf = (v: OtlpValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue));
const attributesOf = (list: OtlpAttribute[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));

/**
 * The in-memory exporter across processes: an OTLP/HTTP receiver every service exports its spans
 * to (OTEL_EXPORTER_OTLP_ENDPOINT), keeping them in a list.
 */
async function startCollector(): Promise<{ url: string; spans: CollectedSpan[]; close(): Promise<void> }> {
  const spans: CollectedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      if (req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(raw.toString('utf8')) as {
        resourceSpans: {
          resource: { attributes: OtlpAttribute[] };
          scopeSpans: {
            spans: (Omit<CollectedSpan, 'service' | 'attributes'> & { attributes?: OtlpAttribute[] })[];
          }[];
        }[];
      };
      for (const rs of body.resourceSpans) {
        const service = String(attributesOf(rs.resource.attributes)['service.name']);
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans)
            spans.push({
              service,
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind,
              attributes: attributesOf(s.attributes),
            });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { url: await listenOn(server), spans, close: () => closeServer(server) };
}

/** A client's own traceparent: a fresh trace id and the id of the (client) span that sends the request. */
function clientTrace() {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

describe('traces: one trace from the client through the gateway, a service and RabbitMQ into audit', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let stack: Stack;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    collector = await startCollector();
    stack = await startStack({
      all: {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_BSP_SCHEDULE_DELAY: '50',
        LOG_LEVEL: 'info',
      },
      // One message per request's event, so each event's producer span has that request's span as
      // parent. (A batch of several requests' events is one message whose producer span links the
      // other traces; the 50 ms default window would batch this test's back-to-back calls.)
      gateway: { PUBLISH_BATCH_DELAY_MS: '0' },
      verify: { PUBLISH_BATCH_DELAY_MS: '0' },
    });
    api = apiClient(stack.gateway.url);
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    await collector?.close();
  }, 30_000);

  const spansOf = (traceId: string) => collector.spans.filter((s) => s.traceId === traceId);

  /** Producer span whose parent is `parent` and whose message carries `eventId` first, and the audit consumer span under it. */
  async function messagePath(traceId: string, parent: CollectedSpan, eventId: string) {
    return eventually(
      async () => {
        const spans = spansOf(traceId);
        const producer = spans.find(
          (s) =>
            s.kind === SPAN_KIND.PRODUCER &&
            s.parentSpanId === parent.spanId &&
            s.attributes['messaging.message.id'] === eventId,
        );
        const consumer =
          producer &&
          spans.find(
            (s) =>
              s.kind === SPAN_KIND.CONSUMER &&
              s.parentSpanId === producer.spanId &&
              s.service === 'audit' &&
              // The audit trail's consumer (the webhooks' queue gets its own copy, with its own span).
              s.attributes['messaging.destination.name'] === `${stack.namespace}.audit.events`,
          );
        return producer && consumer ? { producer, consumer } : undefined;
      },
      15_000,
      `the publish and audit consumer spans of ${eventId}`,
    );
  }

  /** The request's events in the audit trail, once every type in `types` is there. */
  async function eventsOf(auth: string, requestId: string, types: string[]): Promise<AuditEvent[]> {
    return eventually(
      async () => {
        const res = await api('GET', '/v1/events?limit=100', { auth });
        const mine = (res.body.data as AuditEvent[]).filter((e) => e.request_id === requestId);
        return types.every((t) => mine.some((e) => e.type === t)) ? mine : undefined;
      },
      15_000,
      `the ${types.join(', ')} events of ${requestId}`,
    );
  }

  /** JSON log lines of a process that name this request id. */
  function logLinesOf(output: string[], requestId: string): Record<string, unknown>[] {
    return output
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{') && l.includes(requestId))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  it('when a client creates a mandate and verifies an action, each with its traceparent, then the spans of the gateway, the service, the publish and the audit consumer form one trace per request, their log lines and audit events name it', async () => {
    const tenant = await createTenant(stack, { name: 'Traced' });

    // 1. Create: gateway → mandates → outbox relay → RabbitMQ → audit.
    const create = clientTrace();
    const createRequest = `req_trace_create_${randomBytes(4).toString('hex')}`;
    const created = await api('POST', '/v1/mandates', {
      auth: tenant.auth,
      headers: { traceparent: create.traceparent, 'x-request-id': createRequest },
      body: {
        principal: 'user_alice',
        delegate: { id: 'agent_bot', type: 'agent' },
        scope: { actions: ['payments:*'] },
      },
    });
    expect(created.status).toBe(201);

    // 2. Verify: gateway → verify (its fast path) → batched publish → RabbitMQ → audit.
    const verify = clientTrace();
    const verifyRequest = `req_trace_verify_${randomBytes(4).toString('hex')}`;
    const verified = await api('POST', '/v1/verify', {
      auth: tenant.auth,
      headers: { traceparent: verify.traceparent, 'x-request-id': verifyRequest },
      body: { mandate_id: created.body.id, action: 'payments:create' },
    });
    expect(verified.body).toMatchObject({ decision: 'ALLOW' });

    for (const { trace, requestId, service, type } of [
      { trace: create, requestId: createRequest, service: 'mandates', type: 'MANDATE_CREATED' },
      { trace: verify, requestId: verifyRequest, service: 'verify', type: 'VERIFICATION_PERFORMED' },
    ]) {
      // The gateway's server span continues the client's trace; the service's is its child.
      const { gatewaySpan, serviceSpan } = await eventually(
        async () => {
          const spans = spansOf(trace.traceId);
          const gw = spans.find(
            (s) => s.service === 'gateway' && s.kind === SPAN_KIND.SERVER && s.parentSpanId === trace.spanId,
          );
          const sv =
            gw &&
            spans.find(
              (s) => s.service === service && s.kind === SPAN_KIND.SERVER && s.parentSpanId === gw.spanId,
            );
          return gw && sv ? { gatewaySpan: gw, serviceSpan: sv } : undefined;
        },
        15_000,
        `the server spans of ${requestId}`,
      );
      const route = service === 'mandates' ? '/v1/mandates' : '/v1/verify';
      expect(gatewaySpan).toMatchObject({
        name: `POST ${route}`,
        attributes: expect.objectContaining({
          'http.request.method': 'POST',
          'http.route': route,
          'http.response.status_code': service === 'mandates' ? 201 : 200,
          'mandate.tenant_id': tenant.tenant.id,
        }),
      });
      expect(serviceSpan.name).toBe(`POST ${route}`);

      // The request's audit events carry the trace: the service's event its server span, API_CALL the gateway's.
      const events = await eventsOf(tenant.auth, requestId, [type, 'API_CALL']);
      const domainEvent = events.find((e) => e.type === type)!;
      const apiCall = events.find((e) => e.type === 'API_CALL')!;
      expect(domainEvent).toMatchObject({ trace_id: trace.traceId, span_id: serviceSpan.spanId });
      expect(apiCall).toMatchObject({ trace_id: trace.traceId, span_id: gatewaySpan.spanId });

      // Each event's message: a producer span under the span that built it, the audit consumer's under that.
      for (const [parent, event] of [
        [serviceSpan, domainEvent],
        [gatewaySpan, apiCall],
      ] as const) {
        const { producer, consumer } = await messagePath(trace.traceId, parent, event.id);
        expect(producer.service).toBe(parent.service);
        expect(consumer.attributes['messaging.destination.name']).toBe(`${stack.namespace}.audit.events`);
      }

      // Every log line about the request names its trace (the gateway's access line at least).
      const lines = logLinesOf(stack.gateway.output, requestId);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).toMatchObject({ trace_id: trace.traceId });
    }
  }, 60_000);
});
