import { exportJWK, type JWK } from 'jose';
import { z } from 'zod';
import { ConfigError } from '@mandate/shared/core';
import { parseJsonListVariable } from './json-variable';
import { x509 } from './x509';

const jwkSchema = z.looseObject({ kty: z.string(), kid: z.string().optional() });

const jwksEntrySchema = z.strictObject({
  issuer: z.string().min(1),
  jwks: z.strictObject({ keys: z.array(jwkSchema).min(1) }),
});

const x5cEntrySchema = z.strictObject({
  issuer: z.string().min(1),
  x5c_anchors: z
    .array(z.string().includes('-----BEGIN CERTIFICATE-----', { message: 'must be a PEM certificate' }))
    .min(1),
});

export const trustedIssuerEntrySchema = z.union([jwksEntrySchema, x5cEntrySchema]);
export type TrustedIssuerEntry = z.infer<typeof trustedIssuerEntrySchema>;

const trustedIssuersSchema = z.array(trustedIssuerEntrySchema).superRefine((entries, ctx) => {
  const seen = new Set<string>();
  entries.forEach((entry, index) => {
    if (seen.has(entry.issuer)) {
      ctx.addIssue({ code: 'custom', path: [index, 'issuer'], message: `duplicate issuer ${entry.issuer}` });
    }
    seen.add(entry.issuer);
  });
});

/** A bad WALLET_TRUSTED_ISSUERS: one `WALLET_TRUSTED_ISSUERS…: problem` line at start. */
export class TrustedIssuersConfigError extends ConfigError {
  constructor(problem: string) {
    super([problem]);
  }
}

/** Parses WALLET_TRUSTED_ISSUERS (a JSON array); unset or empty means no issuer is trusted. */
export function parseTrustedIssuers(raw: string | undefined): TrustedIssuerEntry[] {
  const entries = parseJsonListVariable(raw, trustedIssuersSchema, {
    notJson: () =>
      new TrustedIssuersConfigError(
        'WALLET_TRUSTED_ISSUERS: is not valid JSON (a JSON array, docs/WALLET.md)',
      ),
    invalid: (issue) => {
      const where = issue?.path.length ? `[${issue.path.join('].[')}]` : '';
      return new TrustedIssuersConfigError(`WALLET_TRUSTED_ISSUERS${where}: ${issue?.message ?? 'invalid'}`);
    },
  });
  // Anchors must parse now, not at the first wallet answer.
  for (const entry of entries) {
    if ('x5c_anchors' in entry) {
      entry.x5c_anchors.forEach((pem, i) => {
        try {
          new x509.X509Certificate(pem);
        } catch {
          throw new TrustedIssuersConfigError(
            `WALLET_TRUSTED_ISSUERS: ${entry.issuer} x5c_anchors[${i}] is not a certificate`,
          );
        }
      });
    }
  }
  return entries;
}

/** Why no key: the issuer is unknown, or the key does not come from its entry. */
export class UntrustedIssuerError extends Error {}

export interface ResolvedIssuerKey {
  issuer: string;
  jwk: JWK;
}

/**
 * The key that must have signed a JWT of `iss`, taken only from that issuer's entry:
 * a jwks key by kid (or the only key when the header names none), or the leaf of the header's
 * x5c chain once the chain is validated up to one of the entry's anchors at `now`.
 */
export async function resolveIssuerKey(
  entries: readonly TrustedIssuerEntry[],
  iss: unknown,
  header: { kid?: unknown; x5c?: unknown },
  now: Date,
): Promise<ResolvedIssuerKey> {
  if (typeof iss !== 'string') throw new UntrustedIssuerError('credential has no iss');
  const entry = entries.find((e) => e.issuer === iss);
  if (!entry) throw new UntrustedIssuerError(`issuer ${iss} is not trusted`);
  if ('jwks' in entry) {
    const keys = entry.jwks.keys;
    const key =
      typeof header.kid === 'string'
        ? keys.find((k) => k.kid === header.kid)
        : keys.length === 1
          ? keys[0]
          : undefined;
    if (!key) throw new UntrustedIssuerError(`no key of ${iss} matches kid ${String(header.kid)}`);
    return { issuer: iss, jwk: key as JWK };
  }
  return { issuer: iss, jwk: await leafKeyOfAnchoredChain(entry.x5c_anchors, header.x5c, now) };
}

async function leafKeyOfAnchoredChain(anchorPems: string[], x5c: unknown, now: Date): Promise<JWK> {
  if (!Array.isArray(x5c) || x5c.length === 0 || !x5c.every((c) => typeof c === 'string')) {
    throw new UntrustedIssuerError('credential header carries no x5c chain');
  }
  let chain: x509.X509Certificate[];
  try {
    chain = (x5c as string[]).map((b64) => new x509.X509Certificate(Buffer.from(b64, 'base64')));
  } catch {
    throw new UntrustedIssuerError('x5c chain holds an unreadable certificate');
  }
  const anchors = anchorPems.map((pem) => new x509.X509Certificate(pem));
  for (const cert of chain) {
    if (cert.notBefore > now || cert.notAfter < now) {
      throw new UntrustedIssuerError(`certificate ${cert.subject} is not valid now`);
    }
  }
  // Each certificate must be signed by the next one; the last by an anchor (or be an anchor).
  for (let i = 0; i < chain.length - 1; i++) {
    const child = chain[i] as x509.X509Certificate;
    const parent = chain[i + 1] as x509.X509Certificate;
    if (!isCa(parent) || !(await child.verify({ publicKey: parent, signatureOnly: true }))) {
      throw new UntrustedIssuerError(`certificate ${child.subject} is not signed by ${parent.subject}`);
    }
  }
  const top = chain[chain.length - 1] as x509.X509Certificate;
  let anchored = false;
  for (const anchor of anchors) {
    if (Buffer.from(anchor.rawData).equals(Buffer.from(top.rawData))) anchored = true;
    else if (
      anchor.notBefore <= now &&
      anchor.notAfter >= now &&
      (await top.verify({ publicKey: anchor, signatureOnly: true }))
    ) {
      anchored = true;
    }
    if (anchored) break;
  }
  if (!anchored) throw new UntrustedIssuerError('x5c chain does not lead to a trusted anchor');
  const leaf = chain[0] as x509.X509Certificate;
  return exportJWK(await leaf.publicKey.export());
}

function isCa(cert: x509.X509Certificate): boolean {
  const bc = cert.getExtension(x509.BasicConstraintsExtension);
  return bc?.ca === true;
}
