import {
  CompactSign,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
} from 'jose';
import { configError } from '@mandate/shared/core';
import type { SignOptions, Signer } from './signer';

/**
 * ES256 with a key held in this process: the one from LOCAL_SIGNING_KEY (a private JWK) when set,
 * else a fresh one (embedded mode; signatures then stop verifying after a restart).
 */
export class LocalSigner implements Signer {
  readonly alg = 'ES256' as const;

  private constructor(
    readonly kid: string,
    private readonly privateKey: CryptoKey,
    private readonly publicJwk: JWK,
    /** Whether the key was generated at start rather than configured. */
    readonly generated: boolean,
  ) {}

  static async create(privateJwkJson?: string): Promise<LocalSigner> {
    let privateJwk: JWK;
    let generated = false;
    if (privateJwkJson) {
      privateJwk = parsePrivateJwk(privateJwkJson);
    } else {
      const pair = await generateKeyPair('ES256', { extractable: true });
      privateJwk = await exportJWK(pair.privateKey);
      generated = true;
    }
    const { kty, crv, x, y } = privateJwk;
    const publicJwk: JWK = { kty, crv, x, y };
    // RFC 7638: the thumbprint covers only the required public members, so it is stable across exports.
    const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
    const privateKey = (await importJWK({ ...privateJwk, alg: 'ES256' }, 'ES256')) as CryptoKey;
    return new LocalSigner(kid, privateKey, { ...publicJwk, kid, alg: 'ES256', use: 'sig' }, generated);
  }

  /**
   * Loads the key kept at `path`, or generates one and writes it there (mode 0600) on first start,
   * so a deployment with a persistent volume keeps one key across restarts.
   */
  static async fromFile(path: string): Promise<LocalSigner> {
    const { readFile, writeFile } = await import('node:fs/promises');
    try {
      return await LocalSigner.create(await readFile(path, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const pair = await generateKeyPair('ES256', { extractable: true });
    const json = JSON.stringify(await exportJWK(pair.privateKey));
    // 'wx' fails if another replica wrote the file meanwhile; then its key is the one to use.
    await writeFile(path, json, { mode: 0o600, flag: 'wx' }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    return LocalSigner.create(await readFile(path, 'utf8'));
  }

  async sign(payload: string, options: SignOptions = {}): Promise<string> {
    return new CompactSign(new TextEncoder().encode(payload))
      .setProtectedHeader({ alg: this.alg, kid: this.kid, ...(options.typ ? { typ: options.typ } : {}) })
      .sign(this.privateKey);
  }

  async publicJwks(): Promise<JWK[]> {
    return [{ ...this.publicJwk }];
  }
}

function parsePrivateJwk(json: string): JWK {
  let jwk: JWK;
  try {
    jwk = JSON.parse(json) as JWK;
  } catch {
    throw configError('LOCAL_SIGNING_KEY', 'must be a JSON private JWK (EC P-256), or unset');
  }
  if (jwk?.kty !== 'EC' || jwk.crv !== 'P-256' || !jwk.x || !jwk.y || !jwk.d) {
    throw configError('LOCAL_SIGNING_KEY', 'must be an EC P-256 private JWK (kty, crv, x, y, d)');
  }
  return jwk;
}
