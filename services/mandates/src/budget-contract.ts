import { z } from 'zod';
import {
  DENY_REASONS,
  PRINTABLE_MESSAGE,
  REQUEST_LIMITS,
  RESOURCE_PATH_MESSAGE,
  isPrintable,
  isSafeResourcePath,
} from '@mandate/verifier/decide';
import { BUDGET_PERIODS } from './budget-period';
import { listing, listQueryShape, routeGroup } from '@mandate/shared/contract';

/**
 * Budgets and spend authorizations (docs/API.md#budgets): the wire vocabulary, schemas and routes,
 * part of the mandates service's contract (contract.ts lists the routes with the others).
 */

export const AUTHORIZATION_STATUSES = ['HELD', 'CAPTURED', 'VOIDED', 'EXPIRED'] as const;
export type AuthorizationStatus = (typeof AUTHORIZATION_STATUSES)[number];

/** hold_seconds bounds and default (docs/API.md#budgets). */
export const HOLD_SECONDS = { min: 60, max: 604_800, default: 900 } as const;

const currency = z.string().regex(/^[A-Z]{3}$/, { error: 'must be a 3-letter uppercase ISO 4217 code' });
const minorUnits = (min: number) =>
  z.number().refine((n) => Number.isSafeInteger(n) && n >= min, {
    error:
      min === 0 ? 'must be a non-negative integer (minor units)' : 'must be a positive integer (minor units)',
  });

export const holdBody = z
  .strictObject({
    // A hold runs every check of verify, its input rules included (docs/API.md#verify-input-rules).
    action: z
      .string()
      .min(REQUEST_LIMITS.action.min)
      .max(REQUEST_LIMITS.action.max)
      .refine(isPrintable, { error: PRINTABLE_MESSAGE }),
    resource: z
      .string()
      .max(REQUEST_LIMITS.resource.max)
      .refine(isPrintable, { error: PRINTABLE_MESSAGE })
      .refine(isSafeResourcePath, { error: RESOURCE_PATH_MESSAGE })
      .optional(),
    amount: minorUnits(1).describe('Minor units of `currency`'),
    currency,
    delegate_id: z.string().max(256).optional(),
    hold_seconds: z
      .int()
      .min(HOLD_SECONDS.min)
      .max(HOLD_SECONDS.max)
      .default(HOLD_SECONDS.default)
      .describe('How long the hold lasts unless captured or voided (60–604800, default 900)'),
  })
  .meta({ id: 'AuthorizationRequest' });
export type HoldBody = z.output<typeof holdBody>;

export const captureBody = z
  .strictObject({
    amount: minorUnits(0)
      .optional()
      .describe('At most the held amount; default all of it. The rest is released.'),
  })
  .meta({ id: 'CaptureRequest' });

export const voidBody = z.strictObject({}).meta({ id: 'VoidRequest' });

export const authorizationSchema = z
  .object({
    id: z.string().meta({ description: 'sau_…' }),
    mandate_id: z.string(),
    action: z.string(),
    resource: z.string().nullable(),
    amount: z.int(),
    currency: z.string(),
    status: z.enum(AUTHORIZATION_STATUSES),
    captured_amount: z.int().meta({ description: '0 unless CAPTURED' }),
    period_start: z
      .string()
      .meta({ description: 'The budget period it counts in (a capture counts there too)' }),
    expires_at: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Authorization' });
export type Authorization = z.output<typeof authorizationSchema>;

export const budgetStateSchema = z
  .object({
    amount: z.int(),
    currency: z.string(),
    period: z.enum(BUDGET_PERIODS),
    timezone: z.string(),
    period_start: z.string(),
    period_end: z.string().nullable().meta({ description: 'null for period total' }),
    captured: z.int(),
    held: z.int(),
    available: z.int(),
  })
  .meta({ id: 'BudgetState' });
export type BudgetState = z.output<typeof budgetStateSchema>;

const decisionShape = {
  mandate_id: z.string(),
  mandate_version: z.int(),
  decision_id: z.string().regex(/^dec_[0-9a-f]{26}$/),
  budget: budgetStateSchema.nullable().meta({ description: 'After the decision; null without a budget' }),
};

export const holdAllowedSchema = z
  .object({
    decision: z.literal('ALLOW'),
    reason: z.literal('OK'),
    ...decisionShape,
    authorization: authorizationSchema,
  })
  .meta({ id: 'AuthorizationAllowed' });

export const holdDeniedSchema = z
  .object({ decision: z.literal('DENY'), reason: z.enum(DENY_REASONS), ...decisionShape })
  .meta({ id: 'AuthorizationDenied' });

export const listAuthorizationsQuery = z.strictObject({
  status: z.enum(AUTHORIZATION_STATUSES).optional(),
  ...listQueryShape,
});

/** Holds, captures and voids spend like a verify: scope `verify`, verify's rate-limit bucket (the global one). */
const spending = routeGroup({ service: 'mandates', auth: 'tenant', tags: ['budgets'], scope: 'verify' });
/** Reads: `mandates:read` or `verify`. */
const budgetReads = routeGroup({
  service: 'mandates',
  auth: 'tenant',
  tags: ['budgets'],
  scope: 'mandates:read',
  scopes: ['mandates:read', 'verify'],
  permissions: ['mandates:read', 'verify'],
});

const authorizationParams = z.object({ id: z.string().meta({ description: 'Authorization id (sau_…)' }) });
const mandateParams = z.object({ id: z.string().meta({ description: 'Mandate id (mdt_…)' }) });

export const budgetRoutes = {
  holdAuthorization: spending.post('/v1/mandates/:id/authorizations', {
    summary: 'Authorize spending: run every verify check, then hold the amount against the budget',
    description:
      'ALLOW → 201 with the authorization (HELD) and the budget after it; DENY → 200 and nothing is held. ' +
      'BUDGET_EXCEEDED when captured + held + amount would pass the budget in the current period.',
    request: { params: mandateParams, body: holdBody },
    responses: {
      201: { description: 'Held', schema: holdAllowedSchema },
      200: { description: 'Denied; nothing held', schema: holdDeniedSchema },
    },
    errors: { 404: 'Mandate not found (or another tenant’s)' },
  }),
  captureAuthorization: spending.post('/v1/authorizations/:id/capture', {
    summary: 'Capture a held authorization (all or part of it); the rest is released',
    request: { params: authorizationParams, body: captureBody, bodyRequired: false },
    responses: { 200: { description: 'The authorization, CAPTURED', schema: authorizationSchema } },
    errors: {
      400: 'amount is more than the held amount',
      404: 'Authorization not found (or another tenant’s)',
      409: 'The authorization is not HELD (the message names its status)',
    },
  }),
  voidAuthorization: spending.post('/v1/authorizations/:id/void', {
    summary: 'Void a held authorization: the whole amount is released',
    request: { params: authorizationParams, body: voidBody, bodyRequired: false },
    responses: { 200: { description: 'The authorization, VOIDED', schema: authorizationSchema } },
    errors: {
      404: 'Authorization not found (or another tenant’s)',
      409: 'The authorization is not HELD (the message names its status)',
    },
  }),
  getAuthorization: budgetReads.get('/v1/authorizations/:id', {
    summary: 'Get an authorization',
    request: { params: authorizationParams },
    responses: { 200: { description: 'The authorization', schema: authorizationSchema } },
    errors: { 404: 'Authorization not found (or another tenant’s)' },
  }),
  listAuthorizations: budgetReads.get('/v1/mandates/:id/authorizations', {
    summary: 'List a mandate’s authorizations, newest first',
    ...listing(listAuthorizationsQuery, 'A page of authorizations', authorizationSchema),
    request: { params: mandateParams, query: listAuthorizationsQuery },
    errors: { 404: 'Mandate not found (or another tenant’s)' },
  }),
  getBudget: budgetReads.get('/v1/mandates/:id/budget', {
    summary: 'A mandate’s budget in the current period: captured, held, available',
    request: { params: mandateParams },
    responses: { 200: { description: 'The budget now', schema: budgetStateSchema } },
    errors: { 404: 'Mandate not found (or another tenant’s), or it has no budget' },
  }),
} as const;
