import { z } from 'zod';
import { defineRoutes } from '@mandate/shared/contract';
import { ASSURANCE_LEVELS, MANDATE_STATES } from '@mandate/mandates';
import {
  CURRENCY_MESSAGE,
  CURRENCY_PATTERN,
  DENY_REASONS,
  PRINTABLE_MESSAGE,
  REQUEST_LIMITS as LIMITS,
  RESOURCE_PATH_MESSAGE,
  isPrintable,
  isSafeResourcePath,
} from '@mandate/verifier/decide';
import { authzenSchemas } from './authzen-contract';

/**
 * The verify service's public contract: the wire vocabulary, the request and response schemas and
 * the route. The package's entry point. Only zod, the shared kernel and the dependency-free decision
 * module here — no domain, no express.
 */

// The mandate states and the assurance scale are the mandates contract's (which takes the scale
// from the decision module). The deny reasons (in the order they are checked: the first failing one
// is the answer) are the decision module's, shared with the offline verifier, so the wire
// vocabulary and the decision cannot drift apart.
export { ASSURANCE_LEVELS, MANDATE_STATES, type AssuranceLevel, type MandateState } from '@mandate/mandates';
export { DENY_REASONS, type DenyReason } from '@mandate/verifier/decide';

const ASSURANCE_PATTERN = new RegExp(`^(?:${ASSURANCE_LEVELS.join('|')})$`);

// The members' rules are the decision module's (docs/API.md#verify-input-rules), which the offline
// verifier checks its requests with: what this schema answers 400, the verifier refuses.
export const verifyRequestSchema = z
  .strictObject({
    mandate_id: z.string().min(LIMITS.mandate_id.min).max(LIMITS.mandate_id.max),
    action: z
      .string()
      .min(LIMITS.action.min)
      .max(LIMITS.action.max)
      .refine(isPrintable, { error: PRINTABLE_MESSAGE }),
    resource: z
      .string()
      .max(LIMITS.resource.max)
      .refine(isPrintable, { error: PRINTABLE_MESSAGE })
      .refine(isSafeResourcePath, { error: RESOURCE_PATH_MESSAGE })
      .optional(),
    amount: z.int().min(0).optional().describe('Minor units'),
    currency: z.string().regex(CURRENCY_PATTERN, { error: CURRENCY_MESSAGE }).optional(),
    delegate_id: z.string().max(LIMITS.delegate_id.max).optional(),
    // A pattern rather than an enum: the hot path's plainObjectParser mirrors string patterns.
    min_assurance: z
      .string()
      .regex(ASSURANCE_PATTERN, {
        error: `must be ${ASSURANCE_LEVELS.slice(0, -1).join(', ')} or ${ASSURANCE_LEVELS.at(-1)}`,
      })
      .optional()
      .describe('Require a wallet-verified principal of at least this level of assurance'),
  })
  // .meta ids name the OpenAPI components (the kernel does not call extendZodWithOpenApi, so no .openapi()).
  .meta({ id: 'VerifyRequest' });
export type VerifyRequest = z.infer<typeof verifyRequestSchema>;

export const verifyResponseSchema = z
  .object({
    decision: z.enum(['ALLOW', 'DENY']),
    reason: z.enum(['OK', ...DENY_REASONS]),
    mandate_id: z.string(),
    mandate_state: z.enum(MANDATE_STATES),
    mandate_version: z.int(),
    decision_id: z.string().regex(/^dec_[0-9a-f]{26}$/),
  })
  .meta({ id: 'VerifyResponse' });

// AuthZEN Authorization API 1.0 (docs/API.md#authzen): each member takes the rule of the verify field it maps to.
export const authzen = authzenSchemas(verifyRequestSchema.shape);
export type AuthzenEvaluation = z.infer<typeof authzen.authzenEvaluationSchema>;
export type AuthzenEvaluationsRequest = z.infer<typeof authzen.authzenEvaluationsRequestSchema>;
export type AuthzenEvaluationResponse = z.infer<typeof authzen.authzenEvaluationResponseSchema>;
export { EVALUATIONS_SEMANTICS, MAX_EVALUATIONS, type EvaluationsSemantic } from './authzen-contract';

export const routes = defineRoutes({
  verify: {
    summary: 'May this delegate do this action now?',
    description:
      'A DENY is a 200 with the first failing reason. The same input against the same mandate version yields a byte-identical body.',
    tags: ['verify'],
    method: 'POST',
    path: '/v1/verify',
    service: 'verify',
    auth: 'tenant',
    scope: 'verify',
    request: { body: verifyRequestSchema },
    responses: { 200: { description: 'The decision', schema: verifyResponseSchema } },
    errors: { 404: 'Mandate not found (or another tenant’s)', 503: 'Mandates service unavailable' },
  },
  // AuthZEN's paths: served under /v1 like every route, and so also at the standard's own unversioned
  // paths (/access/v1/evaluation…), which AuthZEN clients call (docs/DECISIONS.md).
  accessEvaluation: {
    summary: 'AuthZEN: may this subject do this action on this mandate now?',
    description:
      'OpenID AuthZEN Authorization API 1.0 access evaluation, also served at /access/v1/evaluation. The same decision as POST /v1/verify (same reason, same decision_id); an unknown mandate is decision false with reason MANDATE_NOT_FOUND.',
    tags: ['authzen'],
    method: 'POST',
    path: '/v1/access/v1/evaluation',
    service: 'verify',
    auth: 'tenant',
    scope: 'verify',
    request: { body: authzen.authzenEvaluationSchema },
    responses: { 200: { description: 'The decision', schema: authzen.authzenEvaluationResponseSchema } },
    errors: { 503: 'Mandates service unavailable' },
  },
  accessEvaluations: {
    summary: 'AuthZEN: up to 100 evaluations in one call',
    description:
      'OpenID AuthZEN Authorization API 1.0 access evaluations, also served at /access/v1/evaluations. Top-level subject, action, resource and context are defaults an item replaces member by member; answers in request order, stopping at the first deny or permit under deny_on_first_deny or permit_on_first_permit. An item that cannot be evaluated is decision false with context.error. Each item counts one request of the rate limits. Without evaluations the body is one evaluation, answered as by /access/v1/evaluation.',
    tags: ['authzen'],
    method: 'POST',
    path: '/v1/access/v1/evaluations',
    service: 'verify',
    auth: 'tenant',
    scope: 'verify',
    limitCost: 'evaluations',
    request: { body: authzen.authzenEvaluationsRequestSchema, bodyDoc: authzen.authzenEvaluationsRequestDoc },
    responses: {
      200: {
        description: 'The decisions in request order (or one decision, for a body without evaluations)',
        schema: z.union([authzen.authzenEvaluationsResponseSchema, authzen.authzenEvaluationResponseSchema]),
      },
    },
    errors: { 503: 'Mandates service unavailable (a single evaluation)' },
  },
  getAuthzenConfiguration: {
    summary: 'AuthZEN: the policy decision point’s metadata',
    description:
      'Public, also served at /.well-known/authzen-configuration: where the evaluation endpoints are, as absolute URLs under PUBLIC_BASE_URL.',
    tags: ['authzen'],
    method: 'GET',
    path: '/v1/.well-known/authzen-configuration',
    service: 'verify',
    auth: 'public',
    limit: 'public_reads',
    responses: {
      200: { description: 'The PDP metadata', schema: authzen.authzenConfigurationSchema },
    },
  },
});

export const contract = Object.values(routes);
