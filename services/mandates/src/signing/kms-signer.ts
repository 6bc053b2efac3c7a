import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { GetPublicKeyCommand, SignCommand, type KMSClient } from '@aws-sdk/client-kms';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { processMetrics, type Logger } from '@mandate/shared/observability';
import { derToJose } from './der';
import type { SignOptions, Signer } from './signer';

export interface KmsRetryPolicy {
  /** Calls in all, the first included. */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Injected by tests so backoff is observable without waiting. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/** Bounded: a create waits at most ~0.7 s of backoff (plus the calls) before answering 503. */
export const DEFAULT_KMS_RETRY: KmsRetryPolicy = { attempts: 4, baseDelayMs: 100, maxDelayMs: 1_000 };

export interface KmsSignerOptions {
  client: KMSClient;
  /** Key ids, ARNs or aliases (SIGNING_KEY_IDS): the first signs, all are published. */
  keyIds: string[];
  retry?: Partial<KmsRetryPolicy>;
  logger?: Logger;
}

/** KMS could not be reached or kept refusing (throttling, 5xx, network) after the retries. */
export class KmsUnavailable extends Error {
  constructor(operation: string, cause: unknown) {
    super(`KMS ${operation} failed: ${describe(cause)}`);
    this.name = 'KmsUnavailable';
    this.cause = cause;
  }
}

/** The configured key cannot sign ES256 (wrong spec or usage): retrying will not help, fix the config. */
export class KmsKeyMisconfigured extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KmsKeyMisconfigured';
  }
}

interface LoadedKey {
  /** As configured (may be an alias). */
  keyId: string;
  /** The key's ARN as KMS reported it: Sign uses it, so an alias re-pointed later cannot change the key. */
  arn: string;
  kid: string;
  jwk: JWK;
  publicKey: KeyObject;
}

const THROTTLING = new Set(['ThrottlingException', 'TooManyRequestsException', 'RequestLimitExceeded']);
const TRANSIENT_NAMES = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'NetworkingError',
]);
const TRANSIENT_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENOTFOUND',
]);

/** Throttling, server faults and network errors are worth another try; access or key errors are not. */
export function isRetryableKmsError(err: unknown): boolean {
  const e = (err ?? {}) as {
    name?: string;
    code?: string;
    $fault?: string;
    $retryable?: unknown;
    $metadata?: { httpStatusCode?: number };
  };
  if (e.name && (THROTTLING.has(e.name) || TRANSIENT_NAMES.has(e.name))) return true;
  if (e.code && TRANSIENT_CODES.has(e.code)) return true;
  if (e.$retryable) return true;
  if (e.$fault === 'server') return true;
  return (e.$metadata?.httpStatusCode ?? 0) >= 500;
}

/**
 * ES256 with an asymmetric ECC_NIST_P256 key in AWS KMS. The private key never leaves KMS: the
 * JWS signing input is hashed here and KMS signs the digest (ECDSA_SHA_256), its DER answer is
 * turned into JOSE's r||s. Public keys come from GetPublicKey once (lazily, retried until it
 * works) and are cached; the kid is the RFC 7638 thumbprint, so it does not depend on how the
 * key was named (alias, id, ARN) and matches what a LocalSigner with the same key would publish.
 */
export class KmsSigner implements Signer {
  readonly alg = 'ES256' as const;
  private readonly client: KMSClient;
  private readonly keyIds: string[];
  private readonly retry: Required<KmsRetryPolicy>;
  private readonly logger?: Logger;
  private loading?: Promise<LoadedKey[]>;
  private loaded?: LoadedKey[];

  constructor(options: KmsSignerOptions) {
    if (options.keyIds.length === 0) throw new Error('KmsSigner needs at least one key id');
    this.client = options.client;
    this.keyIds = [...new Set(options.keyIds)];
    this.logger = options.logger;
    this.retry = {
      ...DEFAULT_KMS_RETRY,
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      random: Math.random,
      ...options.retry,
    } as Required<KmsRetryPolicy>;
  }

  /** The signing key's kid; known once the public keys are loaded (sign() and publicJwks() load them). */
  get kid(): string {
    const key = this.loaded?.[0];
    if (!key) throw new Error('KMS public key not loaded yet');
    return key.kid;
  }

  /** What the signer is connected to, for the start-up log line. */
  async describe(): Promise<{ keys: { keyId: string; arn: string; kid: string }[] }> {
    const keys = await this.load();
    return { keys: keys.map(({ keyId, arn, kid }) => ({ keyId, arn, kid })) };
  }

  async sign(payload: string, options: SignOptions = {}): Promise<string> {
    const [key] = await this.load();
    const header = { alg: this.alg, kid: key!.kid, ...(options.typ ? { typ: options.typ } : {}) };
    const signingInput = `${b64url(JSON.stringify(header))}.${b64url(payload)}`;
    // DIGEST, not RAW: KMS caps RAW messages at 4 KiB and a mandate with many scope entries is larger.
    const digest = createHash('sha256').update(signingInput).digest();
    const out = await this.withRetry('Sign', () =>
      this.client.send(
        new SignCommand({
          KeyId: key!.arn,
          Message: digest,
          MessageType: 'DIGEST',
          SigningAlgorithm: 'ECDSA_SHA_256',
        }),
      ),
    );
    if (!out.Signature) throw new Error('KMS Sign returned no signature');
    const raw = derToJose(out.Signature, 32);
    // Never hand out a signature the published key would reject (a key mix-up, a corrupted answer).
    if (
      !verify('sha256', Buffer.from(signingInput), { key: key!.publicKey, dsaEncoding: 'ieee-p1363' }, raw)
    ) {
      throw new Error(`KMS signature does not verify with the public key of ${key!.arn}`);
    }
    return `${signingInput}.${b64url(raw)}`;
  }

  async publicJwks(): Promise<JWK[]> {
    return (await this.load()).map((k) => ({ ...k.jwk }));
  }

  /** One GetPublicKey per key for the life of the process; a failed load is not cached, the next call tries again. */
  private load(): Promise<LoadedKey[]> {
    if (this.loaded) return Promise.resolve(this.loaded);
    this.loading ??= Promise.all(this.keyIds.map((id) => this.loadKey(id))).then(
      (keys) => {
        // Two names for one key (an alias and its id) publish it once.
        const unique = keys.filter((k, i) => keys.findIndex((o) => o.kid === k.kid) === i);
        this.loaded = unique;
        return unique;
      },
      (err) => {
        this.loading = undefined;
        throw err;
      },
    );
    return this.loading;
  }

  private async loadKey(keyId: string): Promise<LoadedKey> {
    const out = await this.withRetry('GetPublicKey', () =>
      this.client.send(new GetPublicKeyCommand({ KeyId: keyId })),
    );
    const spec = out.KeySpec ?? out.CustomerMasterKeySpec;
    if (spec !== 'ECC_NIST_P256') {
      throw new KmsKeyMisconfigured(`KMS key ${keyId} has spec ${spec}; ES256 needs ECC_NIST_P256`);
    }
    if (out.KeyUsage !== 'SIGN_VERIFY') {
      throw new KmsKeyMisconfigured(`KMS key ${keyId} has usage ${out.KeyUsage}; signing needs SIGN_VERIFY`);
    }
    if (out.SigningAlgorithms && !out.SigningAlgorithms.includes('ECDSA_SHA_256')) {
      throw new KmsKeyMisconfigured(`KMS key ${keyId} does not support ECDSA_SHA_256`);
    }
    if (!out.PublicKey) throw new KmsKeyMisconfigured(`KMS returned no public key for ${keyId}`);
    const publicKey = createPublicKey({ key: Buffer.from(out.PublicKey), format: 'der', type: 'spki' });
    const { kty, crv, x, y } = publicKey.export({ format: 'jwk' }) as JWK;
    const kid = await calculateJwkThumbprint({ kty, crv, x, y }, 'sha256');
    return {
      keyId,
      arn: out.KeyId ?? keyId,
      kid,
      jwk: { kty, crv, x, y, kid, alg: 'ES256', use: 'sig' },
      publicKey,
    };
  }

  /** Exponential backoff with jitter (half fixed, half random), bounded in attempts and delay. */
  private async withRetry<T>(operation: string, call: () => Promise<T>): Promise<T> {
    const { attempts, baseDelayMs, maxDelayMs, sleep, random } = this.retry;
    for (let attempt = 1; ; attempt++) {
      try {
        // Each attempt is one KMS call: its latency and, when it fails, an error are counted.
        return await processMetrics().timeKms(operation, call);
      } catch (err) {
        if (!isRetryableKmsError(err)) throw err;
        if (attempt >= attempts) throw new KmsUnavailable(operation, err);
        const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
        const delay = ceiling / 2 + (ceiling / 2) * random();
        this.logger?.warn(
          { operation, attempt, delayMs: Math.round(delay), err: describe(err) },
          'KMS call failed, retrying',
        );
        await sleep(delay);
      }
    }
  }
}

function b64url(input: string | Uint8Array): string {
  return Buffer.from(input).toString('base64url');
}

function describe(err: unknown): string {
  const e = err as { name?: string; message?: string };
  return e?.name && e.message ? `${e.name}: ${e.message}` : String(e?.message ?? err);
}
