import { canonicalJson } from '../core/canonical';

/**
 * The wire contract of a mandate's signature (docs/API.md, "Mandates"): a compact ES256 JWS over the RFC 8785
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

/**
 * Signed when present (docs/DECISIONS.md, "Status lists (v3)"): `status: {status_list: {idx, uri}}`, the mandate's entry in a
 * status list. Mandates signed before status lists have none, and their payload is unchanged.
 */
export const MANDATE_OPTIONAL_SIGNED_FIELDS = ['status'] as const;

export type MandateSignedField =
  (typeof MANDATE_SIGNED_FIELDS)[number] | (typeof MANDATE_OPTIONAL_SIGNED_FIELDS)[number];

/** The exact bytes (as a string) the signature covers; other fields of `mandate` are ignored. */
export function mandateSigningPayload(mandate: object): string {
  const fields = mandate as Partial<Record<MandateSignedField, unknown>>;
  // An absent optional field is left out of the canonical JSON (undefined members are), not signed as null.
  return canonicalJson(
    Object.fromEntries(
      [...MANDATE_SIGNED_FIELDS, ...MANDATE_OPTIONAL_SIGNED_FIELDS].map((field) => [field, fields[field]]),
    ),
  );
}
