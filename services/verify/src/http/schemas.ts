import { z } from 'zod';
import { errorResponse, parseOrThrow, type OpenApiContribution } from '@mandate/shared';
import { DENY_REASONS } from '../domain/decide';
import { MANDATE_STATES } from '../domain/mandate';

export const verifyRequestSchema = z
  .strictObject({
    mandate_id: z.string().min(1).max(256),
    action: z.string().min(1).max(200),
    resource: z.string().max(1024).optional(),
    amount: z.int().min(0).optional().describe('Minor units'),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, { error: 'must be a 3-letter uppercase ISO 4217 code' })
      .optional(),
    delegate_id: z.string().max(256).optional(),
  })
  // .meta ids name the OpenAPI components (the kernel does not call extendZodWithOpenApi, so no .openapi()).
  .meta({ id: 'VerifyRequest' });
export type VerifyRequest = z.infer<typeof verifyRequestSchema>;

const VERIFY_KEYS = new Set(['mandate_id', 'action', 'resource', 'amount', 'currency', 'delegate_id']);
const CURRENCY = /^[A-Z]{3}$/;
const optionalString = (v: unknown, max: number) =>
  v === undefined || (typeof v === 'string' && v.length <= max);

/**
 * The verify body, validated: a body that plainly passes every rule of verifyRequestSchema (a
 * plain object of only its keys, each of the right type and size — what every client sends) is
 * copied in the schema's key order, exactly the object zod would answer; anything else, valid or
 * not, goes through zod itself (parseOrThrow), which answers it and words every error. The fast check
 * accepts a subset of what zod accepts, never more (test/schemas.test.ts holds them together).
 */
export function parseVerifyRequest(input: unknown): VerifyRequest {
  return fastVerifyRequest(input) ?? parseOrThrow(verifyRequestSchema, input);
}

export function fastVerifyRequest(input: unknown): VerifyRequest | undefined {
  if (typeof input !== 'object' || input === null || Object.getPrototypeOf(input) !== Object.prototype)
    return undefined;
  const o = input as Record<string, unknown>;
  for (const key in o) if (!VERIFY_KEYS.has(key) || o[key] === undefined) return undefined;
  const { mandate_id: mandateId, action, resource, amount, currency, delegate_id: delegate } = o;
  if (typeof mandateId !== 'string' || mandateId.length < 1 || mandateId.length > 256) return undefined;
  if (typeof action !== 'string' || action.length < 1 || action.length > 200) return undefined;
  if (!optionalString(resource, 1024) || !optionalString(delegate, 256)) return undefined;
  if (amount !== undefined && !(typeof amount === 'number' && Number.isSafeInteger(amount) && amount >= 0))
    return undefined;
  if (currency !== undefined && !(typeof currency === 'string' && CURRENCY.test(currency))) return undefined;
  const out: VerifyRequest = { mandate_id: mandateId, action };
  if (resource !== undefined) out.resource = resource as string;
  if (amount !== undefined) out.amount = amount;
  if (currency !== undefined) out.currency = currency;
  if (delegate !== undefined) out.delegate_id = delegate as string;
  return out;
}

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

export const openApi: OpenApiContribution = (registry) => {
  registry.registerPath({
    method: 'post',
    path: '/v1/verify',
    summary: 'May this delegate do this action now?',
    description:
      'A DENY is a 200 with the first failing reason. The same input against the same mandate version yields a byte-identical body.',
    tags: ['verify'],
    request: { body: { required: true, content: { 'application/json': { schema: verifyRequestSchema } } } },
    responses: {
      200: { description: 'The decision', content: { 'application/json': { schema: verifyResponseSchema } } },
      400: errorResponse('Invalid body; the message names the field'),
      401: errorResponse('Missing or invalid credential'),
      403: errorResponse('The credential lacks the verify scope'),
      404: errorResponse('Mandate not found (or another tenant’s)'),
      405: errorResponse('Wrong method'),
      429: errorResponse('Rate limit or quota exceeded'),
      503: errorResponse('Mandates service unavailable'),
    },
  });
};
