import { z } from 'zod';
import { commonConfigShape, env, parseConfig } from '@mandate/shared/core';
import { DEFAULT_PUBLISH_BATCH_DELAY_MS } from '@mandate/shared/events';
import { type DeploymentNeeds } from '@mandate/shared/service';

export const configSchema = z.object({
  ...commonConfigShape,
  PORT: env.port(8082),
  HOST: env.string('127.0.0.1'),
  /** The mandates service's replicas, comma-separated; required unless a reader is injected. */
  MANDATES_URL: env.urlList(),
  /** Upper bound for one mandate read, retries included. */
  MANDATES_TIMEOUT_MS: env.int(2_000).pipe(z.number().min(1)),
  /** Replaced by REDIS_PREFIX (the snapshots mandates writes under `<REDIS_PREFIX>snapshot:`): refused when set. */
  SNAPSHOT_PREFIX: env.removed('REDIS_PREFIX'),
  /**
   * Verification events are confirmed by the broker in batches of at most this many, or after this
   * delay (see DEFAULT_PUBLISH_BATCH_DELAY_MS).
   */
  PUBLISH_BATCH_MAX: env.int(500).pipe(z.number().int().min(1)),
  PUBLISH_BATCH_DELAY_MS: env.int(DEFAULT_PUBLISH_BATCH_DELAY_MS).pipe(z.number().int().min(0)),
  /** Where verification events wait (fsync'd) while RabbitMQ is unreachable; one directory per process. Unset → a directory under the OS temp dir. */
  EVENT_SPOOL_DIR: env.optionalString(),
  /** Bound of that spool; past it new events are refused (and logged). */
  EVENT_SPOOL_MAX_MB: env.int(256).pipe(z.number().int().min(1)),
  /** Where clients reach the gateway (no trailing path): the AuthZEN metadata's URLs start with it (docs/API.md#authzen). */
  PUBLIC_BASE_URL: env
    .string('http://127.0.0.1:8080')
    .pipe(z.url({ protocol: /^https?$/, error: 'PUBLIC_BASE_URL must be an http(s) URL' })),
});
export type Config = z.output<typeof configSchema>;

export const loadConfig = (source: NodeJS.ProcessEnv = process.env): Config =>
  parseConfig(configSchema, source);

/**
 * What verify needs as its own process listening beyond loopback (a container, a pod): refused at
 * start without it, and checked against the manifests by test/deploy/production-config.test.ts.
 */
export const deploymentNeeds: DeploymentNeeds = {
  required: {
    INTERNAL_TOKEN_SECRET: 'signs and checks the internal tokens; the same value in every service',
    AMQP_URL: 'without it the events stay in this process and never reach audit',
    REDIS_URL: 'the snapshots mandates writes; without it every verification asks mandates',
    MANDATES_URL: 'the mandates service',
  },
  publicUrls: {
    PUBLIC_BASE_URL: 'the AuthZEN metadata names its endpoints under it (docs/API.md#authzen)',
  },
};
