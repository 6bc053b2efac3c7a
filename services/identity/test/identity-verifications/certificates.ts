import { webcrypto } from 'node:crypto';
import { x509 } from '../../src/identity-verifications/x509';

/** A test CA and leaves under it, P-256 / ES256. */
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
type Keys = Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys'];
const DAY = 24 * 3600 * 1000;

async function keyPair(): Promise<Keys> {
  return (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as unknown as Keys;
}

export async function buildCa(name: string, notAfter = new Date(Date.now() + DAY)) {
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: `CN=${name}`,
    notBefore: new Date(Date.now() - DAY),
    notAfter,
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  return { keys, cert };
}

export async function buildLeaf(
  ca: { keys: Keys; cert: x509.X509Certificate },
  notAfter = new Date(Date.now() + DAY),
) {
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject: 'CN=PID provider',
    issuer: ca.cert.subject,
    notBefore: new Date(Date.now() - DAY),
    notAfter,
    signingAlgorithm: ALG,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
  });
  return { keys, cert };
}
