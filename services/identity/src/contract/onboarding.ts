import { labelText } from '@mandate/shared/core';
import { defineRoutes, listing, listQueryShape } from '@mandate/shared/contract';
import { z } from 'zod';
import {
  ONBOARDING_STATUSES,
  ORGANIZATION_NAME_MAX,
  PLANS,
  REJECTION_REASON_MAX,
  TENANT_NAME_MAX,
  USE_CASE_MAX,
  isRealLookingEmail,
} from './wire';
import { platformRoutes, subjectIdSchema, timestamp } from './common';
import { createdApiKeySchema } from './api-keys';
import { tenantSchema } from './tenants';
import { roleAssignmentSchema } from './roles';

// Onboarding requests: schemas and routes.

export const onboardingRequestBody = z.strictObject({
  organization_name: labelText().trim().min(1).max(ORGANIZATION_NAME_MAX),
  contact_email: z
    .string()
    .trim()
    .min(1)
    .refine(isRealLookingEmail, { message: 'must be a valid email address' }),
  country: z
    .string()
    .regex(/^[A-Z]{2}$/, { message: 'must be an ISO 3166-1 alpha-2 code such as DE' })
    .optional(),
  use_case: labelText().trim().max(USE_CASE_MAX).optional(),
});

export const listOnboardingQuery = z.strictObject({
  ...listQueryShape,
  status: z.enum(ONBOARDING_STATUSES).optional(),
});

export const approveOnboardingBody = z.strictObject({
  plan: z.enum(PLANS).default('beta'),
  name: labelText()
    .trim()
    .min(1)
    .max(TENANT_NAME_MAX)
    .optional()
    .describe('Defaults to the organization name'),
  admin_subject_id: subjectIdSchema.optional(),
});

export const rejectOnboardingBody = z.strictObject({
  reason: labelText().trim().max(REJECTION_REASON_MAX).optional(),
});

export const onboardingAcceptedSchema = z
  .object({
    id: z.string(),
    status: z.literal('PENDING'),
    created_at: timestamp,
  })
  .meta({ id: 'OnboardingAccepted' });

export const onboardingRequestSchema = z
  .object({
    id: z.string(),
    organization_name: z.string(),
    contact_email: z.string(),
    country: z.string().nullable(),
    use_case: z.string().nullable(),
    status: z.enum(ONBOARDING_STATUSES),
    created_at: timestamp,
    decided_at: timestamp.nullable(),
    tenant_id: z.string().nullable(),
    rejection_reason: z.string().nullable(),
  })
  .meta({ id: 'OnboardingRequest' });

export const approvedOnboardingSchema = z
  .object({
    onboarding_request: onboardingRequestSchema,
    tenant: tenantSchema,
    api_key: createdApiKeySchema,
    role_assignment: roleAssignmentSchema.nullable(),
  })
  .meta({ id: 'ApprovedOnboarding' });

export const onboardingRoutes = defineRoutes({
  requestOnboarding: {
    summary: 'Ask for a tenant (no authentication; limited per client IP)',
    tags: ['onboarding'],
    method: 'POST',
    path: '/v1/onboarding/request',
    service: 'identity',
    auth: 'public',
    limit: 'onboarding',
    request: { body: onboardingRequestBody },
    responses: {
      202: { description: 'Accepted for review by the platform operator', schema: onboardingAcceptedSchema },
    },
  },
  listOnboardingRequests: platformRoutes.get('/v1/platform/onboarding-requests', {
    summary: 'List onboarding requests, newest first (platform operator)',
    ...listing(listOnboardingQuery, 'A page of requests', onboardingRequestSchema),
  }),
  approveOnboardingRequest: platformRoutes.post('/v1/platform/onboarding-requests/:id/approve', {
    summary: 'Approve a pending request: creates the tenant, its initial key and optionally its tenant_admin',
    request: { body: approveOnboardingBody, bodyRequired: false },
    responses: {
      201: {
        description: 'The decided request, the tenant and its initial key',
        schema: approvedOnboardingSchema,
      },
    },
    secrets: ['api_key'],
    errors: { 409: 'The request was already decided' },
  }),
  rejectOnboardingRequest: platformRoutes.post('/v1/platform/onboarding-requests/:id/reject', {
    summary: 'Reject a pending request',
    request: { body: rejectOnboardingBody, bodyRequired: false },
    responses: { 200: { description: 'The decided request', schema: onboardingRequestSchema } },
    errors: { 409: 'The request was already decided' },
  }),
});
