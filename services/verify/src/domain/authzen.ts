import { z } from 'zod';
import { AppError, badRequest, describeZodError } from '@mandate/shared/core';
import {
  authzen,
  type AuthzenEvaluation,
  type AuthzenEvaluationsRequest,
  type EvaluationsSemantic,
} from '../contract';
import { parseVerifyRequest } from '../http/schemas';
import type { VerifyInput } from './decide';

/**
 * AuthZEN's terms on verify's (docs/API.md#authzen): an evaluation is a verify input, and a batch
 * a list of them, each either valid or the error it would have been answered with alone.
 */

/**
 * The verify body an evaluation stands for: `subject.id` is `delegate_id`, `action.name` the action,
 * `resource.id` the mandate and `resource.properties.resource` the resource; the context gives
 * `amount`, `currency` and `min_assurance`. Members absent stay absent, so the decision_id is the
 * one POST /v1/verify gives for that body. Checked with verify's own parser, so both take the same input.
 */
export function toVerifyInput(e: AuthzenEvaluation): VerifyInput {
  const body: Record<string, unknown> = {
    mandate_id: e.resource.id,
    action: e.action.name,
    delegate_id: e.subject.id,
  };
  const resource = e.resource.properties?.resource;
  if (resource !== undefined) body.resource = resource;
  const context = e.context ?? {};
  if (context.amount !== undefined) body.amount = context.amount;
  if (context.currency !== undefined) body.currency = context.currency;
  if (context.min_assurance !== undefined) body.min_assurance = context.min_assurance;
  return parseVerifyRequest(body);
}

/** One item of a batch: the verify input, or why it cannot be evaluated. */
export type BatchItem = { input: VerifyInput } | { error: AppError };

/**
 * The items of a batch, in order: each item's subject, action, resource and context replace the
 * request's defaults member by member (a member the item names is taken whole), then the result
 * must be a whole evaluation. An item that is not is answered in its place, as a 400 would have
 * been (the message names the member under `evaluations[i]`).
 */
export function batchItems(request: AuthzenEvaluationsRequest): BatchItem[] {
  const { subject, action, resource, context } = request;
  return (request.evaluations ?? []).map((item, i) => {
    try {
      if (typeof item !== 'object' || item === null || Array.isArray(item))
        throw new AppError('BAD_REQUEST', `evaluations[${i}] must be an object`);
      const own = parseItem(authzen.authzenEvaluationItemSchema, item, i);
      const merged = {
        subject: own.subject ?? subject,
        action: own.action ?? action,
        resource: own.resource ?? resource,
        ...((own.context ?? context) !== undefined ? { context: own.context ?? context } : {}),
      };
      return {
        input: toVerifyInput(parseItem(authzen.authzenEvaluationSchema, merged, i)),
      };
    } catch (err) {
      if (err instanceof AppError) return { error: err };
      throw err;
    }
  });
}

/** Parses item `i` of a batch; a failure names the member under `evaluations[i]`, as a 400 would. */
function parseItem<S extends z.ZodType>(schema: S, input: unknown, i: number): z.output<S> {
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  const root = `evaluations[${i}]`;
  const issues = result.error.issues.map((issue) => ({ ...issue, path: [root, ...issue.path] }));
  throw badRequest(describeZodError(new z.ZodError(issues), root));
}

/** Whether the batch stops after an item with this decision (docs/API.md#authzen). */
export function stopsAfter(semantic: EvaluationsSemantic, decision: boolean): boolean {
  if (semantic === 'deny_on_first_deny') return !decision;
  if (semantic === 'permit_on_first_permit') return decision;
  return false;
}
