import { KMSClient } from '@aws-sdk/client-kms';
import { configError } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import type { Config } from '../config';
import { KmsKeyMisconfigured, KmsSigner } from './kms-signer';
import { LocalSigner } from './local-signer';
import type { Signer } from './signer';

/** The KMS keys to use, signing key first: KMS_KEY_ID, then SIGNING_KEY_IDS (config checks they agree). */
export function kmsKeyIds(config: Pick<Config, 'KMS_KEY_ID' | 'SIGNING_KEY_IDS'>): string[] {
  return [...new Set([...(config.KMS_KEY_ID ? [config.KMS_KEY_ID] : []), ...(config.SIGNING_KEY_IDS ?? [])])];
}

/**
 * KMS when KMS_KEY_ID or SIGNING_KEY_IDS is set; else the local ES256 key (configured, kept in a
 * file, or generated for embedded mode). Logs which key it signs with.
 */
export async function createSigner(
  config: Config,
  logger: Logger,
): Promise<{ signer: Signer; close(): Promise<void> }> {
  const keyIds = kmsKeyIds(config);
  if (keyIds.length > 0) return createKmsSigner(config, keyIds, logger);

  const local =
    !config.LOCAL_SIGNING_KEY && config.LOCAL_SIGNING_KEY_FILE
      ? await LocalSigner.fromFile(config.LOCAL_SIGNING_KEY_FILE)
      : await LocalSigner.create(config.LOCAL_SIGNING_KEY);
  if (local.generated) {
    logger.warn(
      { kid: local.kid },
      'mandates: signing key generated at start (no LOCAL_SIGNING_KEY, LOCAL_SIGNING_KEY_FILE or KMS_KEY_ID); signatures will not verify after a restart',
    );
  } else {
    logger.info({ kid: local.kid }, 'mandates: signing with the configured local key');
  }
  return { signer: local, close: async () => undefined };
}

async function createKmsSigner(
  config: Config,
  keyIds: string[],
  logger: Logger,
): Promise<{ signer: Signer; close(): Promise<void> }> {
  if (!config.AWS_REGION)
    throw configError(
      'AWS_REGION',
      "is required when KMS_KEY_ID or SIGNING_KEY_IDS is set (the keys' region)",
    );
  const listed = config.SIGNING_KEY_IDS?.[0];
  if (config.KMS_KEY_ID && listed && listed !== config.KMS_KEY_ID) {
    throw configError('KMS_KEY_ID', 'must be the first of SIGNING_KEY_IDS (the first key signs), or unset');
  }
  if (config.LOCAL_SIGNING_KEY || config.LOCAL_SIGNING_KEY_FILE) {
    logger.warn(
      'mandates: KMS signing is configured; LOCAL_SIGNING_KEY / LOCAL_SIGNING_KEY_FILE are ignored',
    );
  }
  const client = new KMSClient({
    region: config.AWS_REGION,
    ...(config.KMS_ENDPOINT ? { endpoint: config.KMS_ENDPOINT } : {}),
    // KmsSigner retries with its own bounded backoff; SDK retries on top would multiply the wait.
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 1_000, requestTimeout: config.KMS_TIMEOUT_MS },
  });
  const signer = new KmsSigner({ client, keyIds, logger });
  const where = { region: config.AWS_REGION, endpoint: config.KMS_ENDPOINT ?? 'AWS default', keyIds };
  try {
    const { keys } = await signer.describe();
    logger.info(
      { ...where, keys },
      'mandates: signing with AWS KMS (the first key signs, all are published)',
    );
  } catch (err) {
    // A key that cannot sign ES256 is a configuration error; KMS being down at start is not: creates answer 503 until it is back.
    if (err instanceof KmsKeyMisconfigured) {
      client.destroy();
      throw err;
    }
    logger.warn(
      { ...where, err: (err as Error).message },
      'mandates: AWS KMS unreachable at start; mandate creation answers 503 until it is',
    );
  }
  return {
    signer,
    close: async () => client.destroy(),
  };
}
