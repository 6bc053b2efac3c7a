import { canonicalJson } from './canonical';

/**
 * The wire contract of a mandate's signature (SPEC §5): a compact ES256 JWS over the RFC 8785
 * canonical JSON of these fields, everything that never changes after creation. The mandates
 * service signs with it and the offline evidence checker verifies with it, so both read one list.
 */
export const MANDATE_SIGNED_FIELDS = [
  'id',
  'tenant_id',
  'principal',
  'delegate',
  'scope',
  'valid_from',
  'expires_at',
  'created_at',
] as const;

export type MandateSignedField = (typeof MANDATE_SIGNED_FIELDS)[number];

/** The exact bytes (as a string) the signature covers; other fields of `mandate` are ignored. */
export function mandateSigningPayload(mandate: object): string {
  const fields = mandate as Partial<Record<MandateSignedField, unknown>>;
  return canonicalJson(Object.fromEntries(MANDATE_SIGNED_FIELDS.map((field) => [field, fields[field]])));
}
