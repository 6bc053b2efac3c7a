/**
 * Test doubles for AWS KMS that produce real signatures: the keys are P-256 keys generated here,
 * the mocked Sign answers with genuine DER ECDSA signatures over the digest it was sent. Node's
 * crypto can only sign a message (it hashes first), and KMS is asked to sign a digest, so the
 * ECDSA step itself is done here with BigInt; that also lets a test choose the nonce and get
 * signatures whose r or s starts with a zero byte.
 */
import { createServer, type Server } from 'node:http';
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { listenOn } from '@mandate/shared/testing';
import {
  GetPublicKeyCommand,
  KMSClient,
  NotFoundException,
  SignCommand,
  type GetPublicKeyCommandOutput,
  type SignCommandInput,
} from '@aws-sdk/client-kms';
import { mockClient, type AwsClientStub } from 'aws-sdk-client-mock';

// P-256 domain parameters (SEC 2 / FIPS 186-4).
const P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const A = P - 3n;
const N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const G = {
  x: 0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296n,
  y: 0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5n,
};
type Point = { x: bigint; y: bigint } | null;

const mod = (a: bigint, m: bigint) => ((a % m) + m) % m;
function inv(a: bigint, m: bigint): bigint {
  let [r0, r1, t0, t1] = [mod(a, m), m, 1n, 0n];
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1] = [r1, r0 - q * r1];
    [t0, t1] = [t1, t0 - q * t1];
  }
  return mod(t0, m);
}
function add(p: Point, q: Point): Point {
  if (!p) return q;
  if (!q) return p;
  if (p.x === q.x && mod(p.y + q.y, P) === 0n) return null;
  const l =
    p.x === q.x && p.y === q.y
      ? mod((3n * p.x * p.x + A) * inv(2n * p.y, P), P)
      : mod((q.y - p.y) * inv(q.x - p.x, P), P);
  const x = mod(l * l - p.x - q.x, P);
  return { x, y: mod(l * (p.x - x) - p.y, P) };
}
function mul(k: bigint, p: Point): Point {
  let result: Point = null;
  let addend = p;
  for (let e = k; e > 0n; e >>= 1n) {
    if (e & 1n) result = add(result, addend);
    addend = add(addend, addend);
  }
  return result;
}

const toBig = (bytes: Uint8Array) => BigInt('0x' + (Buffer.from(bytes).toString('hex') || '0'));
// Below 2^247: the top byte is zero and the next byte's high bit is clear, so DER really sends
// fewer than 32 bytes (no 0x00 sign byte brings it back to 32).
const SHORT = 1n << 247n;

function derInteger(v: bigint): Buffer {
  let hex = v.toString(16);
  if (hex.length % 2) hex = '0' + hex;
  let bytes = Buffer.from(hex, 'hex');
  // DER integers are signed: a high bit needs a 0x00 in front.
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return Buffer.concat([Buffer.from([0x02, bytes.length]), bytes]);
}
export function derSignature(r: bigint, s: bigint): Buffer {
  const body = Buffer.concat([derInteger(r), derInteger(s)]);
  return Buffer.concat([Buffer.from([0x30, body.length]), body]);
}

export type Shape = 'any' | 'r-leading-zero' | 's-leading-zero';

/** ECDSA over a 32-byte digest; `shape` walks the nonce until r (or s) has a leading zero byte (and is short in DER). */
export function ecdsaSignDigest(
  d: bigint,
  digest: Uint8Array,
  shape: Shape = 'any',
): { r: bigint; s: bigint; der: Buffer } {
  const z = toBig(digest);
  let k = mod(toBig(randomBytes(32)), N - 1n) + 1n;
  let R = mul(k, G);
  for (let guard = 0; guard < 100_000; guard++, k = k + 1n, R = add(R, G)) {
    if (!R) continue;
    const r = mod(R.x, N);
    if (r === 0n) continue;
    const s = mod(inv(k, N) * (z + r * d), N);
    if (s === 0n) continue;
    if (shape === 'r-leading-zero' && r >= SHORT) continue;
    if (shape === 's-leading-zero' && s >= SHORT) continue;
    return { r, s, der: derSignature(r, s) };
  }
  throw new Error('no suitable nonce found');
}

export interface TestKmsKey {
  keyId: string;
  arn: string;
  alias: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  d: bigint;
  spki: Buffer;
  /** The shape of the next signatures this key makes (tests set it). */
  shape: Shape;
}

let counter = 0;
export function makeKmsKey(name = `key-${++counter}`): TestKmsKey {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' });
  const keyId = `${name}-${randomBytes(6).toString('hex')}`;
  return {
    keyId,
    arn: `arn:aws:kms:eu-west-1:111122223333:key/${keyId}`,
    alias: `alias/${name}`,
    privateKey,
    publicKey,
    d: toBig(Buffer.from(jwk.d!, 'base64url')),
    spki: publicKey.export({ format: 'der', type: 'spki' }),
    shape: 'any',
  };
}

function findKey(keys: TestKmsKey[], id: string | undefined): TestKmsKey | undefined {
  return keys.find((k) => id === k.keyId || id === k.arn || id === k.alias);
}

export function publicKeyAnswer(key: TestKmsKey): Partial<GetPublicKeyCommandOutput> {
  return {
    KeyId: key.arn,
    PublicKey: new Uint8Array(key.spki),
    KeySpec: 'ECC_NIST_P256',
    KeyUsage: 'SIGN_VERIFY',
    SigningAlgorithms: ['ECDSA_SHA_256'],
  };
}

export function signAnswer(keys: TestKmsKey[], input: SignCommandInput) {
  const key = findKey(keys, input.KeyId);
  if (!key) throw new NotFoundException({ message: `Key '${input.KeyId}' does not exist`, $metadata: {} });
  if (
    input.MessageType !== 'DIGEST' ||
    input.SigningAlgorithm !== 'ECDSA_SHA_256' ||
    input.Message?.length !== 32
  ) {
    throw new Error(`unexpected Sign input ${JSON.stringify({ ...input, Message: input.Message?.length })}`);
  }
  return {
    KeyId: key.arn,
    SigningAlgorithm: 'ECDSA_SHA_256' as const,
    Signature: ecdsaSignDigest(key.d, input.Message, key.shape).der,
  };
}

/** A real KMSClient whose commands are answered by aws-sdk-client-mock from `keys`. */
export function mockedKms(keys: TestKmsKey[]): { client: KMSClient; kms: AwsClientStub<KMSClient> } {
  const client = new KMSClient({
    region: 'eu-west-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  const kms = mockClient(client);
  kms.on(GetPublicKeyCommand).callsFake(async (input: { KeyId?: string }) => {
    const key = findKey(keys, input.KeyId);
    if (!key) throw new NotFoundException({ message: `Key '${input.KeyId}' does not exist`, $metadata: {} });
    return publicKeyAnswer(key);
  });
  kms.on(SignCommand).callsFake(async (input: SignCommandInput) => signAnswer(keys, input));
  return { client, kms };
}

/**
 * A KMS look-alike over HTTP (the JSON 1.1 protocol the SDK speaks), for tests that go through
 * the SDK's real serialisation: wiring from KMS_ENDPOINT, or a mandates process in an e2e stack.
 */
export async function startFakeKms(
  keys: TestKmsKey[],
): Promise<{ url: string; calls: string[]; stop(): Promise<void> }> {
  const calls: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const target = String(req.headers['x-amz-target'] ?? '');
      const operation = target.replace('TrentService.', '');
      calls.push(operation);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      const reply = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify(json));
      };
      const key = findKey(keys, body.KeyId);
      if (!key)
        return reply(400, { __type: 'NotFoundException', message: `Key '${body.KeyId}' does not exist` });
      if (operation === 'GetPublicKey') {
        const a = publicKeyAnswer(key);
        return reply(200, { ...a, PublicKey: key.spki.toString('base64') });
      }
      if (operation === 'Sign') {
        const out = signAnswer(keys, { ...body, Message: Buffer.from(body.Message, 'base64') });
        return reply(200, { ...out, Signature: out.Signature.toString('base64') });
      }
      return reply(400, { __type: 'UnsupportedOperationException', message: operation });
    });
  });
  return {
    url: await listenOn(server),
    calls,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
