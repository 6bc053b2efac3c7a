import { AppError, eventsNotRecordable, type CallerContext } from '@mandate/shared/core';
import { processMetrics } from '@mandate/shared/observability';
import { buildEvent } from '@mandate/shared/events';
import type { AuthzenEvaluationResponse, EvaluationsSemantic } from '../contract';
import type { AppDeps } from '../deps';
import type { VerifyMetrics } from '../metrics';
import { stopsAfter, type BatchItem } from './authzen';
import { decide, type Decision, type VerifyInput } from './decide';
import type { Mandate } from './mandate';

/** One AuthZEN call, validated: its items in order (one for /access/v1/evaluation). */
export interface EvaluationsCall {
  caller: CallerContext;
  tenantId: string;
  requestId?: string;
  items: BatchItem[];
  semantic: EvaluationsSemantic;
}

/** What became of one item: decided, its mandate absent, or not evaluable (status and message). */
export type EvaluationOutcome =
  | { kind: 'decided'; decision: Decision; input: VerifyInput }
  | { kind: 'not_found'; mandateId: string }
  | { kind: 'error'; error: AppError };

const decisions = processMetrics();

/**
 * Evaluates a batch (docs/API.md#authzen): each distinct mandate is read once, all of them before
 * any item is decided, and every item is decided against that one reading at one instant, so a
 * revoke racing the batch shows in all of its items on that mandate or in none. Each item is the
 * decision POST /v1/verify gives for the same input (the same `decide`). The VERIFICATION_PERFORMED
 * events of the decided items are handed to the publisher in one call (one broker batch, not one
 * round trip per item), before answering and not awaited, as verify's are.
 */
export async function performEvaluations(
  deps: AppDeps,
  metrics: VerifyMetrics,
  call: EvaluationsCall,
): Promise<EvaluationOutcome[]> {
  const { tenantId, caller } = call;
  // As a verify: no decisions whose events could not be kept (docs/DECISIONS.md, "Event spool full").
  if (deps.publisher.accepting?.() === false) throw eventsNotRecordable('Verification events');
  const mandates = await readOnce(deps, call);
  const now = deps.clock.now();

  const outcomes: EvaluationOutcome[] = [];
  for (const item of call.items) {
    const outcome = evaluate(item, mandates, now);
    outcomes.push(outcome);
    if (stopsAfter(call.semantic, outcome.kind === 'decided' && outcome.decision.decision === 'ALLOW')) break;
  }

  const events = [];
  for (const outcome of outcomes) {
    if (outcome.kind !== 'decided') continue;
    const d = outcome.decision;
    decisions.countVerifyDecision(d.decision, d.reason);
    events.push(
      buildEvent({
        type: 'VERIFICATION_PERFORMED',
        tenantId,
        resource: { type: 'mandate', id: d.mandate_id },
        data: {
          input: outcome.input,
          decision: d.decision,
          reason: d.reason,
          decision_id: d.decision_id,
          mandate_version: d.mandate_version,
        },
        caller,
        occurredAt: now,
      }),
    );
  }
  metrics.verifications += events.length;
  if (events.length > 0) {
    metrics.eventsPublished += events.length;
    deps.publisher.publish(events).catch((err) => {
      // The decisions stand; losing their audit events is logged (as verify's, perform-verify.ts).
      deps.logger.error(
        { err, requestId: call.requestId, events: events.length },
        'VERIFICATION_PERFORMED not published',
      );
    });
  }
  return outcomes;
}

/** A mandate as read for a batch: with the budget available now when an item needs it (docs/API.md#budgets). */
interface Reading {
  mandate: Mandate;
  budgetAvailable?: number;
}

/**
 * Each distinct mandate of the valid items, read once and concurrently: its reading, null (absent)
 * or the read's error. A mandate with a budget that an item asks about with an amount also has its
 * available budget read once, as verify reads it for one request.
 */
async function readOnce(
  deps: AppDeps,
  call: EvaluationsCall,
): Promise<Map<string, Reading | null | AppError>> {
  const ids = new Set<string>();
  const withAmount = new Set<string>();
  for (const item of call.items) {
    if (!('input' in item)) continue;
    ids.add(item.input.mandate_id);
    if (item.input.amount !== undefined) withAmount.add(item.input.mandate_id);
  }
  const read = new Map<string, Reading | null | AppError>();
  if (ids.size === 0) return read;
  // One token for the mandates service on the caller's behalf, as verify reads with.
  const internalToken = await deps.mandatesTokens.mint(call.caller, 'mandates');
  const ctx = { tenantId: call.tenantId, internalToken, requestId: call.requestId };
  await Promise.all(
    [...ids].map(async (id) => {
      try {
        const mandate = await deps.reader.get(ctx, id);
        if (!mandate) return read.set(id, null);
        const budgetAvailable =
          mandate.scope.budget && withAmount.has(id) && deps.reader.budgetAvailable
            ? await deps.reader.budgetAvailable(ctx, mandate.id)
            : undefined;
        read.set(id, { mandate, budgetAvailable });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        read.set(id, err);
      }
    }),
  );
  return read;
}

function evaluate(
  item: BatchItem,
  mandates: Map<string, Reading | null | AppError>,
  now: Date,
): EvaluationOutcome {
  if ('error' in item) return { kind: 'error', error: item.error };
  const reading = mandates.get(item.input.mandate_id)!;
  if (reading instanceof AppError) return { kind: 'error', error: reading };
  if (reading === null) return { kind: 'not_found', mandateId: item.input.mandate_id };
  return {
    kind: 'decided',
    decision: decide(reading.mandate, item.input, now, reading.budgetAvailable),
    input: item.input,
  };
}

/** An outcome in AuthZEN's terms (docs/API.md#authzen). */
export function authzenAnswer(outcome: EvaluationOutcome): AuthzenEvaluationResponse {
  if (outcome.kind === 'error')
    return {
      decision: false,
      context: { error: { status: outcome.error.status, message: outcome.error.message } },
    };
  if (outcome.kind === 'not_found')
    return { decision: false, context: { reason: 'MANDATE_NOT_FOUND', mandate_id: outcome.mandateId } };
  const d = outcome.decision;
  return {
    decision: d.decision === 'ALLOW',
    context: {
      reason: d.reason,
      decision_id: d.decision_id,
      mandate_id: d.mandate_id,
      mandate_state: d.mandate_state,
      mandate_version: d.mandate_version,
    },
  };
}
