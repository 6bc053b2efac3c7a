import {
  OpenAPIRegistry,
  OpenApiGeneratorV31,
  extendZodWithOpenApi,
  type ResponseConfig,
  type RouteConfig,
} from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { errorStatusesOf, isRateLimited, type RouteContract } from './contract';
import { errorEnvelopeSchema } from '../core/errors';
import { EVENT_DATA_SCHEMAS, EVENT_OWNERS } from '../events/event-data';
import { auditEventSchema, EVENT_TYPE_DESCRIPTIONS, EVENT_TYPES, type EventType } from '../events/events';
import { withExamples } from './openapi-examples';

// Gives every zod schema `.openapi()`, which the registry relies on for named components.
extendZodWithOpenApi(z);

const ErrorEnvelope = z.strictObject(errorEnvelopeSchema.shape).meta({
  id: 'ErrorEnvelope',
  description: 'Every error: exactly these two members',
});

/** The response headers the gateway sends, by name (each registered once as a component). */
const HEADERS = {
  'X-Request-Id': 'The request id: the caller’s own X-Request-Id when it is sane, else a new one',
  'RateLimit-Limit': 'The size of the bucket that is closest to running out',
  'RateLimit-Remaining': 'Requests left in that bucket',
  'RateLimit-Reset': 'Seconds until that bucket is full again (for the monthly quota: until the month ends)',
  'Retry-After': 'Seconds to wait before retrying',
  'Idempotent-Replayed':
    '"true" when this is the stored answer of an earlier request with the same Idempotency-Key',
} as const;
type HeaderName = keyof typeof HEADERS;
const headerRef = (name: HeaderName) => ({ $ref: `#/components/headers/${name}` });

const SECURITY_SCHEMES = {
  apiKey: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: '<tenantId>:<apiKey>',
    description:
      'An API key: `Authorization: Bearer <tenantId>:<apiKey>`. The same credential may be sent as ' +
      '`X-Api-Key: <apiKey>` (or `X-Api-Key: <tenantId>:<apiKey>`), see apiKeyHeader.',
  },
  apiKeyHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Api-Key',
    description: 'An API key, `[<tenantId>:]<apiKey>`',
  },
  jwt: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'A JWT from a configured issuer; its subject’s role assignment in the tenant gives the permissions. ' +
      'The tenant is the path’s {tenantId}, else the X-Tenant-Id header.',
  },
  operatorToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'The platform operator token (`Authorization: Bearer <token>`); only on /v1/platform/*',
  },
} as const;

const DESCRIPTION = [
  'Every route is also served without the /v1 prefix (an alias).',
  'Every error answer is an ErrorEnvelope `{error, message}`.',
  'A known path called with another method answers 405 METHOD_NOT_ALLOWED with an Allow header;',
  'an unknown path answers 404 NOT_FOUND (neither can be listed per operation, so they are said here).',
  'Every response carries X-Request-Id. Rate-limited routes (every tenant route; onboarding, the JWKS and',
  'the status lists per client IP) send RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset, and on a',
  '429 Retry-After; every 503 carries Retry-After too.',
  'Every POST accepts Idempotency-Key (1–255 printable ASCII): a retry with the same key and request',
  'within 24 h gets the stored answer with Idempotent-Replayed: true.',
].join(' ');

const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema } } });
const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

/** `/v1/mandates/:id` → `/v1/mandates/{id}`. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/** Response schemas named here, once per process: zod's registry refuses an id given twice. */
const namedHere = new WeakMap<z.ZodType, z.ZodType>();

/**
 * A response schema as a named component, as generators want them (a type per answer): its own id
 * when the contract gave it one (`.meta({ id })`), else `<OperationId>Response` after the first
 * operation that answers with it.
 */
function named(route: RouteContract, schema: z.ZodType): z.ZodType {
  if (z.globalRegistry.get(schema)?.id !== undefined) return schema;
  let registered = namedHere.get(schema);
  if (!registered) {
    registered = schema.meta({ id: `${pascal(route.operationId)}Response` });
    namedHere.set(schema, registered);
  }
  return registered;
}

function operationFor(route: RouteContract, schemaOf: (schema: z.ZodType) => z.ZodType): RouteConfig {
  const responses = responsesFor(route, schemaOf);
  const headerParams = headerParamsFor(route);
  const request = route.request ?? {};
  const body = request.bodyDoc ?? request.body;
  return {
    method: route.method.toLowerCase() as RouteConfig['method'],
    path: openApiPath(route.path),
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [...(route.tags ?? [route.service])],
    security:
      route.auth === 'public'
        ? []
        : route.auth === 'operator'
          ? [{ operatorToken: [] }]
          : [{ apiKey: [] }, { apiKeyHeader: [] }, { jwt: [] }],
    request: {
      ...(request.params ? { params: request.params } : {}),
      ...(request.query ? { query: request.query as never } : {}),
      headers: z.object(headerParams),
      ...(body ? { body: { required: request.bodyRequired !== false, ...json(body) } } : {}),
    },
    responses,
  };
}

/** Each documented answer with its headers: the route's own successes, then its errors in the envelope. */
function responsesFor(
  route: RouteContract,
  schemaOf: (schema: z.ZodType) => z.ZodType,
): Record<string, ResponseConfig> {
  const limited = isRateLimited(route);
  const successHeaders = (own: Record<string, string> = {}) => ({
    'X-Request-Id': headerRef('X-Request-Id'),
    ...(limited
      ? {
          'RateLimit-Limit': headerRef('RateLimit-Limit'),
          'RateLimit-Remaining': headerRef('RateLimit-Remaining'),
          'RateLimit-Reset': headerRef('RateLimit-Reset'),
        }
      : {}),
    ...(route.method === 'POST' ? { 'Idempotent-Replayed': headerRef('Idempotent-Replayed') } : {}),
    ...Object.fromEntries(
      Object.entries(own).map(([name, description]) => [name, { description, schema: { type: 'string' } }]),
    ),
  });
  const responses: Record<string, ResponseConfig> = {};
  for (const [status, response] of Object.entries(route.responses)) {
    responses[status] = {
      description: response.description,
      headers: successHeaders(response.headers) as never,
      ...json(schemaOf(response.schema)),
    };
  }
  for (const [status, description] of errorStatusesOf(route)) {
    const headers: Record<string, unknown> = { 'X-Request-Id': headerRef('X-Request-Id') };
    // Every 429 and every 503 says when to retry (docs/API.md, "Errors").
    if (status === 429 || status === 503) headers['Retry-After'] = headerRef('Retry-After');
    if (status === 429) {
      if (limited) {
        headers['RateLimit-Limit'] = headerRef('RateLimit-Limit');
        headers['RateLimit-Remaining'] = headerRef('RateLimit-Remaining');
        headers['RateLimit-Reset'] = headerRef('RateLimit-Reset');
      }
    }
    responses[String(status)] = { description, headers: headers as never, ...json(ErrorEnvelope) };
  }
  return responses;
}

/** The request headers a route reads: request id, tenant for JWT callers, and Idempotency-Key on a POST. */
function headerParamsFor(route: RouteContract): Record<string, z.ZodType> {
  const headerParams: Record<string, z.ZodType> = {
    'X-Request-Id': z
      .string()
      .regex(/^[A-Za-z0-9._:-]{1,128}$/)
      .optional()
      .meta({
        description: 'Your id for this request, echoed back; another is made when absent or not sane',
      }),
  };
  if (route.auth === 'tenant' && !route.path.includes(':tenantId')) {
    headerParams['X-Tenant-Id'] = z
      .string()
      .regex(/^tnt_[0-9a-z]{26}$/)
      .optional()
      .meta({ description: 'JWT callers: the tenant the call is for (API keys name their own tenant)' });
  }
  if (route.method === 'POST') {
    // A secret is shown once (docs/API.md, "Hardening"): the document names what a replay leaves out.
    const omitted = route.secrets?.length
      ? `, without ${route.secrets.map((name) => `\`${name}\``).join(', ')} (a secret is shown once)`
      : '';
    headerParams['Idempotency-Key'] = z
      .string()
      .min(1)
      .max(255)
      .optional()
      .meta({
        description:
          route.replay === false
            ? 'Accepted, never replayed: this route hands a capability to callers without credentials, so every call runs'
            : `Makes a retry safe: the same key and request within 24 h replays the first answer${omitted}`,
      });
  }
  return headerParams;
}

/** `MANDATE_REVOKED` → `MandateRevoked`. */
const pascalType = (type: string) =>
  type.toLowerCase().replace(/(^|_)([a-z])/g, (_m, _sep, c: string) => c.toUpperCase());

/** The tag of the webhooks (the events delivered); `webhooks` is the endpoints' routes. */
const WEBHOOK_TAG = 'webhook-events';

/**
 * The headers every webhook delivery sends (docs/WEBHOOKS.md, "What a delivery looks like"), as
 * services/audit/src/webhooks/worker.ts sets them.
 */
const WEBHOOK_HEADERS = z.object({
  'webhook-id': z
    .string()
    .regex(/^evt_[0-9a-z]{26}$/)
    .meta({ description: 'The event id, the same on every attempt: de-duplicate on it' }),
  'webhook-timestamp': z
    .string()
    .regex(/^[0-9]+$/)
    .meta({ description: 'The attempt’s time in unix seconds; refuse attempts far from your clock' }),
  'webhook-signature': z.string().meta({
    description:
      '`v1,<base64 HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}")>` per signing secret, ' +
      'space-separated; key is the base64-decoded part of the secret after `whsec_`',
  }),
  'user-agent': z.literal('mandate-webhooks/1'),
});

/**
 * One webhook per event type (docs/API.md, "Webhooks"): the POST body a subscribed endpoint
 * receives, `{type, timestamp, data}` with data the event as GET /v1/events/{id} returns it, its
 * `data` by the type's schema (docs/DECISIONS.md, "Event data schemas"). The event is a named
 * component (`MandateRevokedEvent`), so a generator gives each type its own.
 */
function registerWebhooks(registry: OpenAPIRegistry) {
  for (const type of EVENT_TYPES) {
    const event = registry.register(
      `${pascalType(type)}Event`,
      auditEventSchema.extend({ type: z.literal(type), data: EVENT_DATA_SCHEMAS[type] as z.ZodType }).meta({
        description: `A ${type} event, as GET /v1/events/{id} returns it`,
      }),
    );
    registry.registerWebhook({
      method: 'post',
      path: type,
      operationId: `${pascalType(type).replace(/^./, (c) => c.toLowerCase())}Webhook`,
      summary: `${type}, from ${EVENT_OWNERS[type as EventType]}`,
      description:
        `${EVENT_TYPE_DESCRIPTIONS[type]} ` +
        'Posted to each enabled webhook endpoint subscribed to this type (or to `*`), signed per the ' +
        'Standard Webhooks specification and retried for about 28 hours (docs/WEBHOOKS.md).',
      tags: [WEBHOOK_TAG],
      security: [],
      request: {
        headers: WEBHOOK_HEADERS,
        body: {
          required: true,
          ...json(
            z.object({
              type: z.literal(type),
              timestamp: z.iso.datetime().meta({ description: 'The event’s occurred_at' }),
              data: event,
            }),
          ),
        },
      },
      responses: {
        '2XX': {
          description:
            'Acknowledged: any 2xx within 10 seconds. Anything else (another status, a redirect, a timeout) is a failed attempt, retried later.',
        },
      },
    });
  }
}

/** The public document, built from the route contracts of every service (and the gateway's own). */
export function buildOpenApiDocument(routes: readonly RouteContract[]) {
  const registry = new OpenAPIRegistry();
  for (const [name, scheme] of Object.entries(SECURITY_SCHEMES))
    registry.registerComponent('securitySchemes', name, scheme as never);
  for (const [name, description] of Object.entries(HEADERS))
    registry.registerComponent('headers', name, {
      description,
      schema:
        name === 'Idempotent-Replayed'
          ? { type: 'string', enum: ['true'] }
          : {
              type: name === 'X-Request-Id' ? 'string' : 'integer',
              ...(name === 'X-Request-Id' ? {} : { minimum: 0 }),
            },
    } as never);
  registry.register('ErrorEnvelope', ErrorEnvelope);
  for (const route of routes) registry.registerPath(operationFor(route, (schema) => named(route, schema)));
  registerWebhooks(registry);
  const tags = [...new Set(routes.flatMap((r) => r.tags ?? [r.service]))].sort();
  const document = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Mandate service',
      version: '1.0.0',
      description: DESCRIPTION,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [
      {
        url: '/',
        description: 'The gateway that serves this document: the paths are relative to its origin',
      },
      {
        url: '{origin}',
        description: 'A gateway named by its origin (scheme, host and port, no path)',
        variables: {
          origin: {
            default: 'http://127.0.0.1:8080',
            description: 'The gateway of `npm start` listens on port 8080 unless PORT says otherwise',
          },
        },
      },
    ],
    tags: [
      ...tags.map((name) => ({ name, description: `The ${name} operations` })),
      { name: WEBHOOK_TAG, description: 'The events the service posts to your webhook endpoints' },
    ],
  });
  return withExamples(document);
}
