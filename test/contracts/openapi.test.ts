import { execFile } from 'node:child_process';
import path from 'node:path';
import { z } from 'zod';
import { createLogger } from '@mandate/shared/observability';
import { EVENT_DATA_SCHEMAS, EVENT_TYPES, auditEventSchema } from '@mandate/shared/events';
import { errorStatusesOf, type RouteContract } from '@mandate/shared/contract';
import { ServiceClient } from '@mandate/shared/http';
import { CapturingPublisher, testTokens } from '@mandate/shared/testing';
import { createApp, type GatewayApp } from '@mandate/gateway/testing';
import { buildPublicOpenApi, CONTRACTS, ROUTES } from '@mandate/gateway';

const LINTER = path.join(__dirname, 'openapi-lint.mjs');

interface Problem {
  severity: 'error' | 'warn';
  rule: string;
  message: string;
  at?: string;
}

/** Redocly's recommended ruleset over the document (in its own node process: the library is ESM only). */
function lint(document: unknown): Promise<Problem[]> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [LINTER],
      { maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as Problem[]),
    );
    child.stdin!.end(JSON.stringify(document));
  });
}

type Operation = {
  operationId?: string;
  security?: unknown[];
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema: unknown; example?: unknown }> };
  responses: Record<
    string,
    { headers?: Record<string, unknown>; content?: Record<string, { schema: unknown; example?: unknown }> }
  >;
};

describe('the public OpenAPI document', () => {
  const document = buildPublicOpenApi() as unknown as {
    paths: Record<string, Record<string, Operation>>;
    webhooks: Record<string, Record<string, Operation>>;
    components: Record<string, Record<string, unknown>>;
    servers: { url: string; description?: string; variables?: Record<string, { default: string }> }[];
  };
  const operations = Object.entries(document.paths).flatMap(([p, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ key: `${method.toUpperCase()} ${p}`, op })),
  );
  const contractOf = (key: string) =>
    CONTRACTS.find((c) => `${c.method} ${c.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}` === key)!;

  it('when Redocly lints the built document with its recommended rules, then there is no error and no warning', async () => {
    expect(await lint(document)).toEqual([]);
  }, 60_000);

  describe('served by the gateway', () => {
    let gateway: GatewayApp;
    let client: ServiceClient;
    let url: string;
    beforeAll(async () => {
      // GET /v1/openapi.json is answered by the gateway itself: the upstreams are never called.
      client = new ServiceClient(['http://127.0.0.1:9']);
      gateway = createApp({
        tokens: testTokens,
        logger: createLogger('openapi-test', 'silent'),
        publisher: new CapturingPublisher(),
        upstreams: { mandates: client, verify: client, identity: client, audit: client },
        keys: { resolve: async () => null, evict: () => undefined },
        operatorToken: 'operator-token-for-tests',
        openApiDocument: buildPublicOpenApi,
      });
      url = (await gateway.start(0)).url;
    });
    afterAll(async () => {
      await gateway.stop();
      await client.close();
    });

    it('when /v1/openapi.json is fetched, then it is the built document and Redocly finds no error and no warning in it', async () => {
      const res = await fetch(`${url}/v1/openapi.json`);
      expect(res.status).toBe(200);
      const served = await res.json();
      expect(served).toEqual(JSON.parse(JSON.stringify(document)));
      expect(await lint(served)).toEqual([]);
    }, 60_000);
  });

  it('when the document is built, then every route of the gateway table is an operation and nothing else is', () => {
    expect(operations.map((o) => o.key).sort()).toEqual(
      ROUTES.map((r) => `${r.method} ${r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`).sort(),
    );
  });

  it('when the operations are listed, then each has its own operationId', () => {
    const ids = operations.map((o) => o.op.operationId);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it.each(operations.map((o) => [o.key, o.op] as const))(
    'when %s is read, then every status the route can answer is there, errors with the envelope',
    (key, op) => {
      const route = contractOf(key) as RouteContract;
      const statuses = Object.keys(op.responses).map(Number).sort();
      const expected = [...Object.keys(route.responses).map(Number), ...errorStatusesOf(route).keys()].sort();
      expect(statuses).toEqual(expected);
      for (const status of errorStatusesOf(route).keys())
        expect(op.responses[status]!.content!['application/json']!.schema).toEqual({
          $ref: '#/components/schemas/ErrorEnvelope',
        });
      // Only the wallet's JWKS and this document have no 4xx (redocly's operation-4xx-response is off
      // for them); the mandates JWKS has its per-IP 429.
      const has4xx = statuses.some((s) => s >= 400 && s < 500);
      expect(has4xx).toBe(!['GET /v1/openapi.json', 'GET /v1/wallet/jwks'].includes(key));
      for (const status of Object.keys(op.responses))
        expect(op.responses[status]!.headers).toHaveProperty('X-Request-Id');
      // A 429 or a 503, where there is one, says when to retry.
      for (const status of ['429', '503']) {
        const answer = op.responses[status];
        expect({
          key,
          status,
          retryAfter: answer === undefined || 'Retry-After' in (answer.headers ?? {}),
        }).toEqual({ key, status, retryAfter: true });
      }
    },
  );

  it('when a tenant route is read, then it accepts the API key and JWT schemes, documents 401, 429 with RateLimit-* headers and (when scoped) 403, and X-Tenant-Id where the path names no tenant', () => {
    for (const { key, op } of operations) {
      const route = contractOf(key);
      if (route.auth !== 'tenant') continue;
      expect(op.security).toEqual([{ apiKey: [] }, { apiKeyHeader: [] }, { jwt: [] }]);
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '429']));
      // Only a scope can be missing: an unscoped route (GET /v1/me) answers any valid credential.
      expect({ key, documents403: '403' in op.responses }).toEqual({
        key,
        documents403: Boolean(route.scope),
      });
      expect(Object.keys(op.responses['429']!.headers ?? {})).toEqual(
        expect.arrayContaining(['Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']),
      );
      const headers = (op.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name);
      expect(headers).toContain('X-Request-Id');
      // The tenant is named by the path or by the header.
      expect({
        key,
        namesTenant: route.path.includes(':tenantId') || headers.includes('X-Tenant-Id'),
      }).toEqual({
        key,
        namesTenant: true,
      });
    }
  });

  it('when a POST is read, then it documents Idempotency-Key and the 409 of a reused key', () => {
    for (const { key, op } of operations.filter((o) => o.key.startsWith('POST '))) {
      expect({ key, headers: (op.parameters ?? []).map((p) => p.name) }).toEqual({
        key,
        headers: expect.arrayContaining(['Idempotency-Key']),
      });
      expect(op.responses).toHaveProperty('409');
    }
  });

  it('when the components are read, then the envelope, the security schemes and the shared headers are there once', () => {
    expect(document.components.schemas).toHaveProperty('ErrorEnvelope');
    expect(Object.keys(document.components.securitySchemes!).sort()).toEqual([
      'apiKey',
      'apiKeyHeader',
      'jwt',
      'operatorToken',
    ]);
    expect(Object.keys(document.components.headers!)).toEqual(
      expect.arrayContaining([
        'X-Request-Id',
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'Retry-After',
      ]),
    );
  });

  // Generators make a type per component: an inline answer would be an anonymous type, or none.
  it.each(operations.map((o) => [o.key, o.op] as const))(
    'when %s is read, then each success answer is a named component and has an example, as its body does',
    (_key, op) => {
      const successes = Object.entries(op.responses).filter(([status]) => /^2/.test(status));
      expect(successes.length).toBeGreaterThan(0);
      for (const [, response] of successes) {
        const media = response.content!['application/json']!;
        expect(media.schema).toEqual({ $ref: expect.stringMatching(/^#\/components\/schemas\/[A-Za-z]+$/) });
        const name = (media.schema as { $ref: string }).$ref.split('/').pop()!;
        expect(document.components.schemas).toHaveProperty(name);
        expect(media.example).toBeDefined();
      }
      for (const media of Object.values(op.requestBody?.content ?? {})) expect(media.example).toBeDefined();
    },
  );

  describe('webhooks', () => {
    const componentOf = (schema: unknown) =>
      document.components.schemas![(schema as { $ref: string }).$ref.split('/').pop()!] as JsonSchema;

    it('when the webhooks are listed, then there is one per event type and nothing else', () => {
      expect(Object.keys(document.webhooks).sort()).toEqual([...EVENT_TYPES].sort());
      for (const [type, item] of Object.entries(document.webhooks))
        expect({ type, methods: Object.keys(item) }).toEqual({ type, methods: ['post'] });
    });

    it.each([...EVENT_TYPES])(
      'when the %s webhook is read, then its body is {type, timestamp, data: the event} with the type’s data schema, an example that parses, and the delivery headers',
      (type) => {
        const op = document.webhooks[type]!.post!;
        const media = op.requestBody!.content['application/json']!;
        const body = media.schema as JsonSchema;
        expect(body.required).toEqual(['type', 'timestamp', 'data']);
        expect(body.properties!.type!.enum).toEqual([type]);
        const event = componentOf(body.properties!.data);
        expect(event.properties!.type!.enum).toEqual([type]);
        // The documented data is the schema producers are held to (event-data.ts), member by member.
        expect(skeleton(event.properties!.data!)).toEqual(
          skeleton(z.toJSONSchema(EVENT_DATA_SCHEMAS[type], { io: 'output' }) as JsonSchema),
        );
        const example = media.example as { type: string; data: { type: string; data: unknown } };
        expect(example.type).toBe(type);
        expect(auditEventSchema.parse(example.data).type).toBe(type);
        expect(EVENT_DATA_SCHEMAS[type].safeParse(example.data.data).error).toBeUndefined();
        // As services/audit/src/webhooks/worker.ts sends them (services/audit/test/webhooks-api.test.ts holds it to them).
        expect((op.parameters ?? []).map((p) => `${p.in} ${p.name}`)).toEqual([
          'header webhook-id',
          'header webhook-timestamp',
          'header webhook-signature',
          'header user-agent',
        ]);
        expect(Object.keys(op.responses)).toEqual(['2XX']);
      },
    );
  });

  it('when the servers are read, then each is described and a variable one names its default origin', () => {
    expect(document.servers.length).toBeGreaterThan(0);
    for (const server of document.servers) {
      expect(server.description).toEqual(expect.any(String));
      for (const variable of Object.values(server.variables ?? {}))
        expect(variable.default).toMatch(/^https?:\/\/[^/]+$/);
    }
  });
});

type JsonSchema = {
  type?: string | string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
};

/**
 * What two JSON Schema writers (zod-to-openapi's, zod's own) agree on: each member's type, whether
 * it may be null, its values, the required members and the items, recursively; not descriptions,
 * integer bounds or how nullability is spelled.
 */
function skeleton(schema: JsonSchema): unknown {
  const branches = schema.anyOf ?? schema.oneOf;
  const base = branches?.find((b) => b.type !== 'null') ?? schema;
  const types = [schema.type, ...(branches ?? []).map((b) => b.type)].flat();
  const values = base.enum ?? (base.const !== undefined ? [base.const] : undefined);
  return {
    type: [base.type].flat().find((t) => t !== 'null'),
    nullable: types.includes('null'),
    ...(values ? { values } : {}),
    ...(base.properties
      ? {
          properties: Object.fromEntries(
            Object.entries(base.properties).map(([name, member]) => [name, skeleton(member)]),
          ),
          required: [...(base.required ?? [])].sort(),
        }
      : {}),
    ...(base.items ? { items: skeleton(base.items) } : {}),
  };
}
