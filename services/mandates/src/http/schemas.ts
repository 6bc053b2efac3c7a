import { z } from 'zod';
import {
  errorResponse,
  labelText,
  listQueryShape,
  pageSchema,
  type OpenApiContribution,
} from '@mandate/shared';
import { MANDATE_STATES, PARTY_TYPES } from '../domain/mandate';

const timestamp = z.iso.datetime({
  offset: true,
  error: 'must be an ISO 8601 timestamp, e.g. 2026-11-21T12:00:00.000Z',
});

export const partySchema = z
  .strictObject({
    id: labelText().min(1).max(256),
    type: z.enum(PARTY_TYPES).optional(),
    name: labelText().min(1).max(256).optional(),
  })
  .meta({ id: 'Party' });

/** A string is shorthand for `{id}`; expanded before validation so errors name the nested field. */
const partyInput = z.preprocess((v) => (typeof v === 'string' ? { id: v } : v), partySchema);
/** How the shorthand is documented (the preprocess above is invisible to the OpenAPI generator). */
const partyInputDoc = z.union([z.string().min(1).max(256), partySchema]);

const ACTION = /^(\*|[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*(:\*)?)$/;

export const scopeSchema = z
  .strictObject({
    actions: z
      .array(
        z
          .string()
          .max(200)
          .regex(ACTION, { error: 'must be an action like payments:create, payments:* or *' }),
      )
      .min(1)
      .max(100)
      .default(['*']),
    // An empty list must not read as "anything" (SPEC §5 v2, fail closed): omit it instead.
    resources: z.array(z.string().min(1).max(512)).min(1).max(100).optional(),
    constraints: z
      .strictObject({
        max_amount: z
          .number()
          .refine((n) => Number.isSafeInteger(n) && n >= 0, {
            error: 'must be a non-negative integer (minor units)',
          })
          .optional(),
        currency: z
          .string()
          .regex(/^[A-Z]{3}$/, { error: 'must be a 3-letter uppercase ISO 4217 code' })
          .optional(),
      })
      .optional(),
  })
  .meta({ id: 'Scope' });

export const metadataSchema = z
  .record(labelText().min(1).max(40), labelText().max(500))
  .refine((r) => Object.keys(r).length <= 20, { error: 'must have at most 20 keys' });

export const createMandateBody = z.strictObject({
  principal: partyInput,
  delegate: partyInput,
  scope: scopeSchema.optional(),
  valid_from: timestamp.nullish(),
  expires_at: timestamp.nullish(),
  metadata: metadataSchema.optional(),
});
export type CreateMandateBody = z.output<typeof createMandateBody>;

const createMandateBodyDoc = createMandateBody
  .extend({ principal: partyInputDoc, delegate: partyInputDoc })
  .meta({ id: 'CreateMandateRequest' });

export const lifecycleBody = z
  .strictObject({ reason: z.string().max(500).optional() })
  .meta({ id: 'LifecycleRequest' });

export const listMandatesQuery = z.strictObject({
  state: z.enum(MANDATE_STATES).optional(),
  principal_id: z.string().min(1).max(256).optional(),
  delegate_id: z.string().min(1).max(256).optional(),
  ...listQueryShape,
});

export const mandateSchema = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    principal: partySchema,
    delegate: partySchema,
    scope: scopeSchema,
    state: z.enum(MANDATE_STATES),
    valid_from: z.string().nullable(),
    expires_at: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    version: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
    signature: z.object({
      alg: z.literal('ES256'),
      kid: z.string(),
      jws: z
        .string()
        .meta({ description: 'Compact JWS over the RFC 8785 canonical JSON of the immutable fields' }),
    }),
  })
  .meta({ id: 'Mandate' });

export const jwksSchema = z
  .object({
    keys: z.array(
      z.object({
        kty: z.string(),
        crv: z.string(),
        x: z.string(),
        y: z.string(),
        kid: z.string(),
        alg: z.string(),
        use: z.string(),
      }),
    ),
  })
  .meta({ id: 'JWKS' });

const idParams = z.object({ id: z.string().meta({ description: 'Mandate id (mdt_…)' }) });
const json = <S extends z.ZodType>(schema: S) => ({ content: { 'application/json': { schema } } });

export const openApi: OpenApiContribution = (registry) => {
  registry.registerPath({
    method: 'post',
    path: '/v1/mandates',
    summary: 'Create a signed mandate',
    request: { body: json(createMandateBodyDoc) },
    responses: {
      201: { description: 'The new mandate, ACTIVE, version 1', ...json(mandateSchema) },
      400: errorResponse('Invalid body; the message names the field'),
      503: errorResponse('Signing service unavailable'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/mandates',
    summary: 'List mandates, newest first',
    request: { query: listMandatesQuery },
    responses: {
      200: { description: 'A page of mandates', ...json(pageSchema(mandateSchema)) },
      400: errorResponse('Invalid filter or cursor'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/mandates/{id}',
    summary: 'Get a mandate',
    request: { params: idParams },
    responses: {
      200: { description: 'The mandate', ...json(mandateSchema) },
      404: errorResponse('Mandate not found'),
    },
  });
  for (const operation of ['suspend', 'reactivate', 'revoke'] as const) {
    registry.registerPath({
      method: 'post',
      path: `/v1/mandates/{id}/${operation}`,
      summary: `${operation[0]!.toUpperCase()}${operation.slice(1)} a mandate`,
      request: { params: idParams, body: { ...json(lifecycleBody), required: false } },
      responses: {
        200: { description: 'The mandate after the transition', ...json(mandateSchema) },
        404: errorResponse('Mandate not found'),
        409: errorResponse('Transition not allowed from the current state'),
      },
    });
  }
  registry.registerPath({
    method: 'get',
    path: '/v1/.well-known/jwks.json',
    summary: 'Public keys that check mandate signatures',
    security: [],
    responses: { 200: { description: 'JWK set', ...json(jwksSchema) } },
  });
};
