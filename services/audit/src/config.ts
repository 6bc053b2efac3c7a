import { z } from 'zod';
import { commonConfigShape, env } from '@mandate/shared';

export const auditConfigSchema = z.object({
  ...commonConfigShape,
  PORT: env.port(8084),
  HOST: env.string('127.0.0.1'),
  /** Unacked messages the broker hands the consumer at once: bounds memory and in-flight writes. */
  AUDIT_PREFETCH: env.int(200).refine((n) => n >= 1 && n <= 65535, 'must be between 1 and 65535'),
  /** Database name when MONGO_URL is set. */
  MONGO_DB: env.string('mandate_audit'),
  /** Without MONGO_URL: a journal file that makes the in-memory store survive restarts (and crashes); unset → memory only. */
  AUDIT_STORE_FILE: env.optionalString(),
  /** The mandates service's replicas, comma-separated: the evidence export reads the mandate, the keys and the signature there. */
  MANDATES_URL: env.urlList(),
  /** Upper bound for one call to the mandates service, retries included. */
  MANDATES_TIMEOUT_MS: env.int(5_000).pipe(z.number().int().min(1)),
});
export type AuditConfig = z.output<typeof auditConfigSchema>;

/** Tests and the embedded launcher build configs without touching process.env. */
export function auditConfig(overrides: Partial<Record<keyof AuditConfig, string>> = {}): AuditConfig {
  return auditConfigSchema.parse(overrides);
}
