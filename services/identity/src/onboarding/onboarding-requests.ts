import { newId, type CallerContext } from '@mandate/shared/core';
import { type AuditEvent } from '@mandate/shared/events';
import { type Page } from '@mandate/shared/contract';
import { readPage } from '../common/store';
import { nowIso, recordedEvent, relay, type IdentityDeps } from '../common/deps';
import type { Plan } from '../tenants/tenant';
import { createTenant, type CreatedTenant } from '../tenants/tenants';
import {
  OnboardingAlreadyDecided,
  OnboardingRequestNotFound,
  decided,
  type OnboardingDecision,
  type OnboardingRequest,
  type OnboardingStatus,
} from './onboarding';

export interface ApprovedOnboarding extends CreatedTenant {
  request: OnboardingRequest;
}

/** The operator's view of a request in events: never the contact address (PII stays in the record). */
function onboardingEvent(
  deps: IdentityDeps,
  r: OnboardingRequest,
  type: 'ONBOARDING_REQUESTED' | 'ONBOARDING_APPROVED' | 'ONBOARDING_REJECTED',
  caller?: CallerContext,
): AuditEvent {
  const data = {
    id: r.id,
    organization_name: r.organization_name,
    country: r.country,
    status: r.status,
    tenant_id: r.tenant_id,
  };
  const event =
    type === 'ONBOARDING_REJECTED' ? { type, data: { ...data, reason: r.rejection_reason } } : { type, data };
  // An approval belongs to the tenant it creates; a request and a rejection to no tenant.
  const tenantId = type === 'ONBOARDING_APPROVED' ? r.tenant_id : null;
  return recordedEvent(
    deps,
    { ...event, tenantId, resource: { type: 'onboarding_request', id: r.id } },
    caller,
  );
}

export async function requestOnboarding(
  deps: IdentityDeps,
  input: { organizationName: string; contactEmail: string; country?: string; useCase?: string },
  caller?: CallerContext,
): Promise<OnboardingRequest> {
  const request: OnboardingRequest = {
    id: newId('onb'),
    organization_name: input.organizationName,
    contact_email: input.contactEmail,
    country: input.country ?? null,
    use_case: input.useCase ?? null,
    status: 'PENDING',
    created_at: nowIso(deps),
    decided_at: null,
    tenant_id: null,
    rejection_reason: null,
  };
  const events = [onboardingEvent(deps, request, 'ONBOARDING_REQUESTED', caller)];
  await deps.store.onboarding.insert(request, events);
  await relay(deps, events);
  return request;
}

export function listOnboardingRequests(
  deps: IdentityDeps,
  options: { limit: number; after?: string; status?: OnboardingStatus },
): Promise<Page<OnboardingRequest>> {
  return readPage(
    options,
    (window) => deps.store.onboarding.list({ ...window, status: options.status }),
    (r) => r.id,
  );
}

/**
 * Read → decide → the write guarded by PENDING: of two decisions at once, one is stored with its
 * event and the other is 409. Answers the decided request and its stored (not yet relayed) events.
 */
async function decide(
  deps: IdentityDeps,
  id: string,
  decision: OnboardingDecision,
  caller?: CallerContext,
): Promise<{ request: OnboardingRequest; events: AuditEvent[] }> {
  const pending = await deps.store.onboarding.get(id);
  if (!pending) throw new OnboardingRequestNotFound();
  if (pending.status !== 'PENDING') throw new OnboardingAlreadyDecided(pending.status);
  const next = decided(pending, decision);
  const type = next.status === 'APPROVED' ? 'ONBOARDING_APPROVED' : 'ONBOARDING_REJECTED';
  const events = [onboardingEvent(deps, next, type, caller)];
  const request = await deps.store.onboarding.decide(next, events);
  if (!request)
    throw new OnboardingAlreadyDecided((await deps.store.onboarding.get(id))?.status ?? 'decided');
  return { request, events };
}

/**
 * Decides first (so a second approval is 409 and never makes a second tenant), then creates the
 * tenant under the id the decision recorded.
 */
export async function approveOnboarding(
  deps: IdentityDeps,
  id: string,
  input: { plan: Plan; name?: string; adminSubjectId?: string },
  caller?: CallerContext,
): Promise<ApprovedOnboarding> {
  const tenantId = newId('tnt');
  const decision = { status: 'APPROVED', at: nowIso(deps), tenantId } as const;
  const { request, events } = await decide(deps, id, decision, caller);
  const created = await createTenant(
    deps,
    {
      id: tenantId,
      name: input.name ?? request.organization_name,
      plan: input.plan,
      adminSubjectId: input.adminSubjectId,
    },
    caller,
  );
  // Relayed after the tenant's events (the order readers expect) unless the outbox poll's tick came
  // first; if the tenant writes failed, the poll publishes it.
  await relay(deps, events);
  return { request, ...created };
}

export async function rejectOnboarding(
  deps: IdentityDeps,
  id: string,
  input: { reason?: string },
  caller?: CallerContext,
): Promise<OnboardingRequest> {
  const decision = { status: 'REJECTED', at: nowIso(deps), reason: input.reason } as const;
  const { request, events } = await decide(deps, id, decision, caller);
  await relay(deps, events);
  return request;
}
