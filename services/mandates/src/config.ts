import { z } from 'zod';
import { commonConfigShape, env } from '@mandate/shared/core';
import { type DeploymentNeeds } from '@mandate/shared/service';

/** The only reader of process.env for this service (via parseConfig in main.ts). */
export const configSchema = z.object({
  ...commonConfigShape,
  PORT: env.port(8081),
  HOST: env.string('127.0.0.1'),
  /** Database name when MONGO_URL is set. */
  MONGO_DB: env.string('mandates'),
  /** A private EC P-256 JWK (JSON) to sign with; unset → a key generated at start (embedded mode). */
  LOCAL_SIGNING_KEY: env.optionalString(),
  /** A file holding that JWK; created with a new key on first start (compose keeps it on a volume). */
  LOCAL_SIGNING_KEY_FILE: env.optionalString(),
  /** An asymmetric ECC_NIST_P256 KMS key (id, ARN or alias) to sign with; set → AWS KMS instead of the local key. */
  KMS_KEY_ID: env.optionalString(),
  /** Comma-separated KMS keys for rotation: the first signs, all are published (if KMS_KEY_ID is set too, it must be the first). */
  SIGNING_KEY_IDS: env.list(),
  /** Region of the KMS keys; required with KMS_KEY_ID / SIGNING_KEY_IDS. */
  AWS_REGION: env.optionalString(),
  /** A KMS-compatible endpoint (LocalStack, a VPC endpoint); unset → the region's AWS endpoint. */
  KMS_ENDPOINT: env.optionalUrl(),
  /** Upper bound for one KMS call; throttling and 5xx are retried with backoff on top of it. */
  KMS_TIMEOUT_MS: env.int(2_000).pipe(z.number().int().min(1)),
  /** Replaced by REDIS_PREFIX (the snapshots live under `<REDIS_PREFIX>snapshot:`): refused when set. */
  SNAPSHOT_PREFIX: env.removed('REDIS_PREFIX'),
  SNAPSHOT_TTL_SECONDS: env.int(86_400).pipe(z.number().int().min(60)),
  /** How often the expiry sweeper runs; 0 turns it off. */
  EXPIRY_SWEEP_INTERVAL_MS: env.int(5_000).pipe(z.number().int().min(0)),
  /** The identity service's replicas: binds principal.verification_id at creation; unset → that answers 503. */
  IDENTITY_URL: env.urlList(),
  /**
   * Where clients reach the gateway (no trailing path): status-list uris signed into mandates are
   * `{PUBLIC_BASE_URL}/v1/status-lists/{list_id}`. Keep it stable: a signed uri never changes.
   */
  PUBLIC_BASE_URL: env
    .string('http://127.0.0.1:8080')
    .pipe(z.url({ protocol: /^https?$/, error: 'PUBLIC_BASE_URL must be an http(s) URL' })),
  /** How long a status list may be cached (Cache-Control max-age and its `ttl` claim), 10–3600 s. */
  STATUS_LIST_TTL_SECONDS: env.int(60).pipe(z.number().int().min(10).max(3600)),
});

export type Config = z.output<typeof configSchema>;

/**
 * As a process of its own (start:services, compose, Kubernetes) mandates may run as several
 * replicas, and each would generate a key of its own: a mandate signed by one would not verify
 * against another's JWKS. So one key must be configured there; embedded mode generates one.
 */
export const separateProcessConfigSchema = configSchema.superRefine((config, ctx) => {
  const configured =
    config.LOCAL_SIGNING_KEY ||
    config.LOCAL_SIGNING_KEY_FILE ||
    config.KMS_KEY_ID ||
    config.SIGNING_KEY_IDS?.length;
  if (!configured)
    ctx.addIssue({
      code: 'custom',
      path: ['LOCAL_SIGNING_KEY'],
      message:
        'is required when mandates runs as its own process (every replica must sign with the same key): set LOCAL_SIGNING_KEY (a private EC P-256 JWK) or LOCAL_SIGNING_KEY_FILE, or KMS_KEY_ID / SIGNING_KEY_IDS with AWS_REGION',
    });
});

/**
 * What mandates needs as its own process listening beyond loopback (a container, a pod): refused at
 * start without it, and checked against the manifests by test/deploy/production-config.test.ts.
 */
export const deploymentNeeds: DeploymentNeeds = {
  required: {
    INTERNAL_TOKEN_SECRET: 'signs and checks the internal tokens; the same value in every service',
    AMQP_URL: 'without it the events stay in this process and never reach audit',
    MONGO_URL: 'mandates and status lists must survive a restart',
    REDIS_URL: 'the snapshots verify answers from',
    IDENTITY_URL: 'binds identity verifications to mandates',
    PUBLIC_BASE_URL:
      "signed into every mandate's status-list uri for good; the gateway's public URL, e.g. https://api.example.com",
  },
  publicUrls: {
    PUBLIC_BASE_URL: "every mandate's status-list uri, fetched by relying parties",
  },
  outbound: {
    KMS_KEY_ID: 'AWS KMS signs there',
    KMS_ENDPOINT: 'a KMS-compatible endpoint',
  },
};
