import { z } from 'zod';
import { commonConfigShape, env, parseConfig } from '@mandate/shared/core';
import { DEFAULT_PUBLISH_BATCH_DELAY_MS } from '@mandate/shared/events';
import { type DeploymentNeeds } from '@mandate/shared/service';
import { planOverridesSchema } from './limits/plans';

export const gatewayConfigSchema = z.object({
  ...commonConfigShape,
  PORT: env.port(8080),
  HOST: env.string('127.0.0.1'),
  OPERATOR_TOKEN: env.optionalString(),
  MANDATES_URL: env.urlList(),
  VERIFY_URL: env.urlList(),
  IDENTITY_URL: env.urlList(),
  AUDIT_URL: env.urlList(),
  /** How long a resolved API key is trusted without asking identity again. */
  KEY_CACHE_TTL_MS: env.int(500),
  /** How often the gateway checks identity's credential epoch (the safety net under the push); capped at half KEY_CACHE_TTL_MS. */
  CREDENTIAL_CHECK_INTERVAL_MS: env.int(250),
  /** JSON list of {name, issuer, jwks_uri, audience, subject_scheme} (docs/API.md, "Authentication"). */
  JWT_ISSUERS: env.optionalString(),
  /** The dashboard's build, served at /dashboard/; unset → packages/dashboard/dist of this repository. */
  DASHBOARD_DIR: env.optionalString(),
  /** The dashboard's OIDC sign-in (authorization code + PKCE): the issuer, with the public client's id; both or neither. */
  DASHBOARD_OIDC_ISSUER: env.optionalUrl(),
  DASHBOARD_OIDC_CLIENT_ID: env.optionalString(),
  DASHBOARD_OIDC_SCOPE: env.string('openid'),
  /** The resource indicator (RFC 8707) the dashboard asks its access token for: the audience the gateway expects. */
  DASHBOARD_OIDC_AUDIENCE: env.optionalString(),
  TRUST_PROXY: env.bool(false),
  /** Failed authentications a client IP may have per minute; beyond it every authenticated route answers 429 until the minute passes. */
  AUTH_FAILURE_LIMIT_PER_MINUTE: env.int(20).pipe(z.number().int().min(1)),
  /** One info line per request (method, route, status, ms, request id, tenant, key id or subject); LOG_LEVEL above info silences it too. */
  ACCESS_LOG: env.bool(true),
  /** Replaced by REDIS_PREFIX (every Redis key of every service under one prefix): refused when set. */
  RATE_LIMIT_PREFIX: env.removed('REDIS_PREFIX'),
  IDEMPOTENCY_PREFIX: env.removed('REDIS_PREFIX'),
  /** Idempotency-Key records: how long a response is kept; how long a duplicate waits for the first. */
  IDEMPOTENCY_TTL_SECONDS: env.int(24 * 60 * 60),
  IDEMPOTENCY_WAIT_MS: env.int(10_000),
  /** How long a service behind the gateway may stay silent before the call answers 503 (docs/CONFIGURATION.md). */
  UPSTREAM_TIMEOUT_MS: env.int(10_000).pipe(z.number().int().min(100).max(120_000)),
  /** Where API_CALL events wait (fsync'd) while RabbitMQ is unreachable; one directory per process. Unset → a directory under the OS temp dir. */
  EVENT_SPOOL_DIR: env.optionalString(),
  /** Bound of that spool; past it new events are refused (and logged). */
  EVENT_SPOOL_MAX_MB: env.int(256).pipe(z.number().int().min(1)),
  /**
   * API_CALL events per broker message at most, and how long one waits for its batch to fill (see
   * DEFAULT_PUBLISH_BATCH_DELAY_MS).
   */
  PUBLISH_BATCH_MAX: env.int(200).pipe(z.number().int().min(1)),
  PUBLISH_BATCH_DELAY_MS: env.int(DEFAULT_PUBLISH_BATCH_DELAY_MS).pipe(z.number().int().min(0)),
  /** JSON replacing some of the plans' numbers (docs/API.md, "Rate limits and quotas"), e.g. a small quota for tests; see limits/plans.ts. */
  PLAN_OVERRIDES: z.preprocess((v) => {
    if (v === '' || v === undefined) return undefined;
    try {
      return JSON.parse(String(v));
    } catch {
      return Symbol('invalid JSON');
    }
  }, planOverridesSchema.optional()),
});

export type GatewayConfig = z.output<typeof gatewayConfigSchema>;

export const loadGatewayConfig = (source: NodeJS.ProcessEnv = process.env) =>
  parseConfig(gatewayConfigSchema, source);

/**
 * What gateway needs as its own process listening beyond loopback (a container, a pod): refused at
 * start without it, and checked against the manifests by test/deploy/production-config.test.ts.
 */
export const gatewayDeploymentNeeds: DeploymentNeeds = {
  required: {
    INTERNAL_TOKEN_SECRET: 'signs and checks the internal tokens; the same value in every service',
    AMQP_URL: 'without it the events stay in this process and never reach audit',
    OPERATOR_TOKEN: "the platform operator's bearer secret",
    REDIS_URL: 'rate limits, quotas and Idempotency-Key records shared by every replica',
    MANDATES_URL: 'the mandates service',
    VERIFY_URL: 'the verify service',
    IDENTITY_URL: 'the identity service',
    AUDIT_URL: 'the audit service',
  },
  publicUrls: {
    DASHBOARD_OIDC_ISSUER: "the dashboard's sign-in, opened by the browser",
    JWT_ISSUERS: 'the issuers and JWKS of JWT callers',
  },
  outbound: {
    JWT_ISSUERS: 'the JWKS of the JWT issuers',
  },
};
