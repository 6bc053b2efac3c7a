import { useQuery } from '@tanstack/react-query';
import type { AuthzenEvaluationRequest, Mandate } from '@mandate/client';
import { reasonInWords, reasonReads, type ReasonFacts } from '@mandate/verifier/decide';
import { apiOf } from './api';
import { useAuth } from './auth';

export type AskedRequest = NonNullable<ReasonFacts['request']>;

/** What a decision's reason is told with: what was asked, and which mandate it was asked of. */
export interface ReasonContext {
  /** What was asked: the playground's body, an event's `data.input`. */
  request?: AskedRequest;
  /** The mandate decided against: read (GET /v1/mandates/{id}) only for a reason that compares with it. */
  mandateId?: string;
  /** The mandate, where the page has it already (its own page). */
  mandate?: Mandate;
  /**
   * A decision just taken: its budget is read now (GET /v1/mandates/{id}/budget). A past decision's
   * is not, as what is left now is not what was left then.
   */
  live?: boolean;
}

/** An AuthZEN evaluation as the verify request it maps to (docs/API.md#authzen). */
export function requestOfEvaluation(e: AuthzenEvaluationRequest): AskedRequest {
  const c = e.context ?? {};
  return {
    mandate_id: e.resource.id,
    action: e.action.name,
    delegate_id: e.subject.id,
    ...(e.resource.properties?.resource !== undefined ? { resource: e.resource.properties.resource } : {}),
    ...(typeof c.amount === 'number' ? { amount: c.amount } : {}),
    ...(c.currency !== undefined ? { currency: c.currency } : {}),
    ...(c.min_assurance !== undefined ? { min_assurance: c.min_assurance } : {}),
  };
}

/** An event's `data.input` (no contract types `data` per event type) as the request it records. */
export function requestOfInput(input: unknown): AskedRequest | undefined {
  if (!input || typeof input !== 'object') return undefined;
  const i = input as Record<string, unknown>;
  const text = (k: string) => (typeof i[k] === 'string' ? { [k]: i[k] as string } : {});
  return {
    ...text('mandate_id'),
    ...text('action'),
    ...text('resource'),
    ...text('currency'),
    ...text('delegate_id'),
    ...text('min_assurance'),
    ...(typeof i.amount === 'number' ? { amount: i.amount } : {}),
  };
}

/**
 * A decision's reason in words, from the catalogue docs/API.md's table is checked against
 * (docs/API.md#reasons-in-words), with the comparison that failed when its facts are at hand. A
 * fact the caller may not read (no mandates:read) or that fails to load leaves the plain sentence.
 * The mandate is the mandate page's query (['mandate', id]), so a page that has it asks no more.
 */
export function useReasonInWords(
  reason: string,
  { request, mandateId, mandate, live }: ReasonContext,
): string {
  const { session, permissions } = useAuth();
  const reads = reasonReads(reason);
  const id = mandateId ?? mandate?.id ?? request?.mandate_id;
  const fetched = useQuery({
    queryKey: ['mandate', id],
    queryFn: () => apiOf(session).mandates.get(id!),
    enabled: reads === 'mandate' && !mandate && !!id && !!permissions?.includes('mandates:read'),
    staleTime: 60_000,
  });
  const budget = useQuery({
    queryKey: ['budget', id],
    queryFn: () => apiOf(session).budgets.get(id!),
    enabled:
      reads === 'budget' &&
      !!live &&
      !!id &&
      !!(permissions?.includes('mandates:read') || permissions?.includes('verify')),
  });
  return reasonInWords(reason, {
    ...(request ? { request } : {}),
    ...((mandate ?? fetched.data) ? { mandate: mandate ?? fetched.data } : {}),
    ...(budget.data ? { budget: budget.data } : {}),
  });
}

/**
 * A reason in words, whole: it wraps rather than being cut (docs/DASHBOARD.md, "Design system"),
 * its code in `data-reason` for a test to find it by.
 */
export function ReasonWords({
  reason,
  testId,
  ...context
}: ReasonContext & { reason: string; testId?: string }) {
  const words = useReasonInWords(reason, context);
  return (
    <span className="reason-words" data-reason={reason} data-testid={testId}>
      {words}
    </span>
  );
}
