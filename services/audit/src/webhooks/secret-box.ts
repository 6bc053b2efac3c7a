import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Webhook signing secrets must be usable (HMAC needs the secret itself), so unlike API keys they
 * cannot be stored as a hash: they are sealed with AES-256-GCM under a key derived (HKDF) from
 * the internal secret every service already holds, and only ever opened to sign a delivery. A
 * copy of the database alone does not reveal them.
 */
export interface SecretBox {
  seal(secret: string): string;
  open(sealed: string): string;
}

const VERSION = 'v1';

export function secretBox(internalSecret: string): SecretBox {
  const key = Buffer.from(
    hkdfSync('sha256', internalSecret, 'mandate-webhooks', 'webhook-endpoint-secrets', 32),
  );
  return {
    seal(secret) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return [
        VERSION,
        iv.toString('base64url'),
        sealed.toString('base64url'),
        cipher.getAuthTag().toString('base64url'),
      ].join('.');
    },
    open(value) {
      const [version, iv, sealed, tag] = value.split('.');
      if (version !== VERSION || !iv || !sealed || !tag) throw new Error('not a sealed webhook secret');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    },
  };
}
