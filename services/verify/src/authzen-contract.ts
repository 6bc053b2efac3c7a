import { z } from 'zod';
import { DENY_REASONS } from '@mandate/verifier/decide';
import { MANDATE_STATES } from '@mandate/mandates';

/**
 * The AuthZEN Authorization API 1.0 wire shapes (docs/API.md#authzen): an evaluation names the
 * subject (verify's `delegate_id`), the action (`action`), the mandate as the resource (`mandate_id`,
 * and `properties.resource` as verify's `resource`) and a context (`amount`, `currency`,
 * `min_assurance`). Each member takes verify's own rule for the field it maps to, so an evaluation
 * is valid exactly when the verify body it maps to is (the decision module then sees the same input).
 */

/** The most items one POST /access/v1/evaluations may carry (docs/API.md#authzen). */
export const MAX_EVALUATIONS = 100;

export const EVALUATIONS_SEMANTICS = ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'] as const;
export type EvaluationsSemantic = (typeof EVALUATIONS_SEMANTICS)[number];

/** The fields of verify's request schema the AuthZEN members take their rules from. */
export interface VerifyFields {
  mandate_id: z.ZodString;
  action: z.ZodString;
  resource: z.ZodOptional<z.ZodString>;
  amount: z.ZodOptional<z.ZodType<number>>;
  currency: z.ZodOptional<z.ZodString>;
  min_assurance: z.ZodOptional<z.ZodString>;
}

/** Free-form `properties` (AuthZEN's subject and action attributes): any members, none read. */
const ignoredProperties = () => z.record(z.string(), z.unknown()).optional().describe('Accepted and ignored');

/**
 * The schemas, built from verify's request schema (its field rules) by the contract, which owns both:
 * a function of those fields, so this module imports nothing of the contract.
 */
export function authzenSchemas(verify: VerifyFields) {
  const members = memberSchemas(verify);
  return { ...members, ...requestSchemas(members), ...responseSchemas() };
}

/** An evaluation's members, each with the rule of the verify field it maps to. */
function memberSchemas(verify: VerifyFields) {
  const authzenSubjectSchema = z
    .strictObject({
      type: z.string().min(1).max(256).describe('Free text (the delegate’s kind); not checked'),
      id: z.string().min(1).max(256).describe('Checked as verify’s delegate_id'),
      properties: ignoredProperties(),
    })
    .meta({ id: 'AuthzenSubject' });

  const authzenActionSchema = z
    .strictObject({
      name: verify.action.describe('Verify’s action'),
      properties: ignoredProperties(),
    })
    .meta({ id: 'AuthzenAction' });

  const authzenResourceSchema = z
    .strictObject({
      type: z.literal('mandate'),
      id: verify.mandate_id.describe('The mandate id'),
      properties: z.strictObject({ resource: verify.resource.describe('Verify’s resource') }).optional(),
    })
    .meta({ id: 'AuthzenResource' });

  const authzenContextSchema = z
    .strictObject({
      amount: verify.amount,
      currency: verify.currency,
      min_assurance: verify.min_assurance,
    })
    .describe('Verify’s amount, currency and min_assurance')
    .meta({ id: 'AuthzenContext' });

  return { authzenSubjectSchema, authzenActionSchema, authzenResourceSchema, authzenContextSchema };
}

/** One evaluation, and a batch of them (as validated, and as documented). */
function requestSchemas(members: ReturnType<typeof memberSchemas>) {
  const { authzenSubjectSchema, authzenActionSchema, authzenResourceSchema, authzenContextSchema } = members;
  const authzenEvaluationSchema = z
    .strictObject({
      subject: authzenSubjectSchema,
      action: authzenActionSchema,
      resource: authzenResourceSchema,
      context: authzenContextSchema.optional(),
    })
    .meta({ id: 'AuthzenEvaluationRequest' });

  /** One item of a batch as documented: any member it names replaces the request's default. */
  const authzenEvaluationItemSchema = z
    .strictObject({
      subject: authzenSubjectSchema.optional(),
      action: authzenActionSchema.optional(),
      resource: authzenResourceSchema.optional(),
      context: authzenContextSchema.optional(),
    })
    .meta({ id: 'AuthzenEvaluationItem' });

  const evaluationsOptionsSchema = z.strictObject({
    evaluations_semantic: z
      .enum(EVALUATIONS_SEMANTICS)
      .optional()
      .describe('execute_all (default) answers every item; the others stop at the first deny / permit'),
  });

  const defaults = {
    subject: authzenSubjectSchema.optional(),
    action: authzenActionSchema.optional(),
    resource: authzenResourceSchema.optional(),
    context: authzenContextSchema.optional(),
    options: evaluationsOptionsSchema.optional(),
  };

  /**
   * What validates a batch: the defaults and options whole (a bad one is a bad request), the items
   * only as a list of 1 to 100 — a bad item is answered in its place (docs/API.md#authzen).
   */
  const authzenEvaluationsRequestSchema = z.strictObject({
    ...defaults,
    evaluations: z.array(z.unknown()).min(1).max(MAX_EVALUATIONS).optional(),
  });

  /** The same request as the document shows it, items typed. */
  const authzenEvaluationsRequestDoc = z
    .strictObject({
      ...defaults,
      evaluations: z
        .array(authzenEvaluationItemSchema)
        .min(1)
        .max(MAX_EVALUATIONS)
        .optional()
        .describe('1 to 100 items; without it the body is one evaluation'),
    })
    .meta({ id: 'AuthzenEvaluationsRequest' });

  return {
    authzenEvaluationSchema,
    authzenEvaluationItemSchema,
    authzenEvaluationsRequestSchema,
    authzenEvaluationsRequestDoc,
  };
}

/** The answers: one evaluation's, a batch's, and the PDP's configuration. */
function responseSchemas() {
  const decidedContextSchema = z.object({
    reason: z.enum(['OK', ...DENY_REASONS]),
    decision_id: z.string().regex(/^dec_[0-9a-f]{26}$/),
    mandate_id: z.string(),
    mandate_state: z.enum(MANDATE_STATES),
    mandate_version: z.int(),
  });
  const notFoundContextSchema = z.object({
    reason: z.literal('MANDATE_NOT_FOUND'),
    mandate_id: z.string(),
  });
  const errorContextSchema = z.object({
    error: z.object({
      status: z.int().describe('The status the item alone would have been answered with'),
      message: z.string(),
    }),
  });

  const authzenEvaluationResponseSchema = z
    .object({
      decision: z.boolean(),
      context: z.union([decidedContextSchema, notFoundContextSchema, errorContextSchema]),
    })
    .meta({ id: 'AuthzenEvaluationResponse' });

  const authzenEvaluationsResponseSchema = z
    .object({ evaluations: z.array(authzenEvaluationResponseSchema) })
    .meta({ id: 'AuthzenEvaluationsResponse' });

  const authzenConfigurationSchema = z
    .object({
      policy_decision_point: z.url(),
      access_evaluation_endpoint: z.url(),
      access_evaluations_endpoint: z.url(),
    })
    .meta({ id: 'AuthzenConfiguration' });
  return { authzenEvaluationResponseSchema, authzenEvaluationsResponseSchema, authzenConfigurationSchema };
}
