import { z } from 'zod';
import { commonConfigShape, env } from '@mandate/shared/core';
import { type DeploymentNeeds } from '@mandate/shared/service';

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
  /**
   * Seconds between two rounds of signed checkpoints of the tenant logs (docs/API.md#proving-the-log):
   * each tenant whose log has grown gets one, signed by the mandates service (MANDATES_URL).
   */
  AUDIT_CHECKPOINT_SECONDS: env.int(60).refine((n) => n >= 1 && n <= 3600, 'must be between 1 and 3600'),
  /** Upper bound for one call to the mandates service, retries included. */
  MANDATES_TIMEOUT_MS: env.int(5_000).pipe(z.number().int().min(1)),
  /**
   * Local development only: webhook URLs may also be http://127.0.0.1:<port> or http://localhost:<port>.
   * `npm start` turns it on unless set; never in production.
   */
  WEBHOOKS_ALLOW_LOOPBACK: env.bool(false),
  /** One delivery attempt, connect to last byte. */
  WEBHOOKS_TIMEOUT_MS: env.int(10_000).pipe(z.number().int().min(100).max(60_000)),
  /** Delays after each failed attempt, seconds (±20 % jitter each); after the last, the delivery is FAILED. */
  WEBHOOKS_RETRY_SCHEDULE: z.preprocess(
    (v) => (v === undefined || v === '' ? '5,300,1800,7200,18000,36000,36000' : v),
    z
      .string()
      .transform((v) => v.split(',').map((s) => Number(s.trim())))
      .pipe(
        z
          .array(
            z
              .number()
              .positive()
              .max(7 * 24 * 3600),
          )
          .min(1)
          .max(20),
      ),
  ),
  /** An endpoint whose every attempt has failed for this many hours is disabled. */
  WEBHOOKS_DISABLE_AFTER_HOURS: z.preprocess(
    (v) => (v === undefined || v === '' ? '120' : v),
    z.coerce
      .number()
      .positive()
      .max(24 * 365),
  ),
  /** Deliveries in flight at once per audit process. */
  WEBHOOKS_CONCURRENCY: env.int(64).pipe(z.number().int().min(1).max(1000)),
  /** How often each process asks the store for due deliveries (retries, other processes' fan-out). */
  WEBHOOKS_POLL_MS: env.int(1_000).pipe(z.number().int().min(10).max(60_000)),
  /** Days a finished delivery (SUCCEEDED or FAILED) is kept after its last attempt; PENDING ones stay. */
  WEBHOOKS_DELIVERY_RETENTION_DAYS: env.int(30).pipe(z.number().int().min(1).max(3_650)),
});
export type AuditConfig = z.output<typeof auditConfigSchema>;

/** Tests and the embedded launcher build configs without touching process.env. */
export function auditConfig(overrides: Partial<Record<keyof AuditConfig, string>> = {}): AuditConfig {
  return auditConfigSchema.parse(overrides);
}

/**
 * What audit needs as its own process listening beyond loopback (a container, a pod): refused at
 * start without it, and checked against the manifests by test/deploy/production-config.test.ts.
 */
export const auditDeploymentNeeds: DeploymentNeeds = {
  required: {
    INTERNAL_TOKEN_SECRET: 'signs and checks the internal tokens; the same value in every service',
    AMQP_URL: 'without it the events stay in this process and never reach audit',
    MONGO_URL: 'the audit trail and webhook deliveries must survive a restart',
    MANDATES_URL: 'the evidence export reads the mandate there',
  },
  publicUrls: {},
  outbound: {
    WEBHOOKS_TIMEOUT_MS: 'webhook deliveries to the HTTPS URLs tenants register',
  },
};
