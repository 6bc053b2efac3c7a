import { parseOrThrow } from '@mandate/shared/core';
import { plainObjectParser } from './plain-parser';
import { verifyRequestSchema, type VerifyRequest } from '../contract';

// The schema is the contract's; this module keeps the fast path that parses it.
export { verifyRequestSchema, type VerifyRequest };

/**
 * The verify body, validated: a body that plainly passes every rule of verifyRequestSchema (what
 * every client sends) takes the check derived from the schema itself (plainObjectParser), exactly
 * the object zod would answer; anything else, valid or not, goes through zod (parseOrThrow), which
 * answers it and words every error (test/schemas.test.ts holds the two together).
 */
export function parseVerifyRequest(input: unknown): VerifyRequest {
  return fastVerifyRequest(input) ?? parseOrThrow(verifyRequestSchema, input);
}

export const fastVerifyRequest = plainObjectParser(verifyRequestSchema);
