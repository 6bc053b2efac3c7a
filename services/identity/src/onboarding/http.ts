import { callerOf, implement, type Implementation } from '@mandate/shared/http';
import { createdApiKeyView } from '../api-keys/http';
import { pick } from '../http/view';
import { routes } from '../contract';
import type { Deps } from '../deps';
import { pageView, pageWindow } from '../http/pages';
import { requireOperator } from '../http/tenancy';
import { roleAssignmentView } from '../role-assignments/http';
import { tenantView } from '../tenants/http';
import type { OnboardingRequest } from './onboarding';
import {
  approveOnboarding,
  listOnboardingRequests,
  rejectOnboarding,
  requestOnboarding,
} from './onboarding-requests';

/** The one place a stored onboarding request becomes a response body. */
export const onboardingView = (r: OnboardingRequest) =>
  pick(r, [
    'id',
    'organization_name',
    'contact_email',
    'country',
    'use_case',
    'status',
    'created_at',
    'decided_at',
    'tenant_id',
    'rejection_reason',
  ]);

export const onboardingHandlers = (deps: Deps): Implementation[] => [
  /** Public: the gateway forwards it without a tenant (actor system), limited per client IP. */
  implement(routes.requestOnboarding)(async ({ body }, req) => {
    const value = await requestOnboarding(
      deps,
      {
        organizationName: body.organization_name,
        contactEmail: body.contact_email,
        country: body.country,
        useCase: body.use_case,
      },
      callerOf(req),
    );
    // A new request is always PENDING (the contract says so with a literal).
    return { status: 202, body: { id: value.id, status: 'PENDING', created_at: value.created_at } };
  }),

  implement(routes.listOnboardingRequests)(async ({ query }, req) => {
    requireOperator(req);
    const page = await listOnboardingRequests(deps, {
      ...pageWindow(query),
      status: query.status,
    });
    return { status: 200, body: pageView(page, onboardingView) };
  }),

  implement(routes.approveOnboardingRequest)(async ({ params, body }, req) => {
    requireOperator(req);
    const value = await approveOnboarding(
      deps,
      params.id,
      {
        plan: body.plan,
        name: body.name,
        adminSubjectId: body.admin_subject_id,
      },
      callerOf(req),
    );
    return {
      status: 201,
      body: {
        onboarding_request: onboardingView(value.request),
        tenant: tenantView(value.tenant),
        api_key: createdApiKeyView(value.issued),
        role_assignment: value.assignment ? roleAssignmentView(value.assignment) : null,
      },
    };
  }),

  implement(routes.rejectOnboardingRequest)(async ({ params, body }, req) => {
    requireOperator(req);
    const value = await rejectOnboarding(deps, params.id, { reason: body.reason }, callerOf(req));
    return { status: 200, body: onboardingView(value) };
  }),
];
