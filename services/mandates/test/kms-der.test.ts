import { createHash, generateKeyPairSync, sign, verify } from 'node:crypto';
import { derToJose } from '../src/signing/der';
import { derSignature, ecdsaSignDigest, makeKmsKey } from './kms-support';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const int = (h: string) => BigInt('0x' + h);

describe('derToJose (DER ECDSA signature → JOSE r||s)', () => {
  it('when r and s are full 32-byte values with the high bit set, then the DER 0x00 prefixes are stripped', () => {
    const r = 'f'.repeat(64);
    const s = '8' + '1'.repeat(63);
    const der = derSignature(int(r), int(s));
    expect(der.length).toBe(2 + 2 * (2 + 33));
    expect(hex(derToJose(der))).toBe(r + s);
  });

  it('when r has a leading zero byte, then DER carries 31 bytes and the result is left-padded to 32', () => {
    const r = '00' + '7a'.repeat(31);
    const s = '42'.repeat(32);
    const der = derSignature(int(r), int(s));
    expect(der[3]).toBe(31);
    expect(hex(derToJose(der))).toBe(r + s);
  });

  it('when s has several leading zero bytes, then it is padded back to 32 bytes', () => {
    const r = 'c3'.repeat(32);
    const s = '000000' + '99'.repeat(29);
    expect(hex(derToJose(derSignature(int(r), int(s))))).toBe(r + s);
  });

  it('when node signs thousands of messages, then every DER signature converts to exactly its IEEE P1363 form, leading zeros included', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    let rZero = 0;
    let sZero = 0;
    for (let i = 0; i < 3000 || rZero === 0 || sZero === 0; i++) {
      if (i > 50_000) throw new Error('no leading-zero signature found');
      const data = Buffer.from(`message ${i}`);
      const der = sign('sha256', data, { key: privateKey, dsaEncoding: 'der' });
      const raw = derToJose(der);
      // Same signature, other encoding: node must accept it as P1363.
      expect(verify('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' }, raw)).toBe(true);
      if (raw[0] === 0) rZero++;
      if (raw[32] === 0) sZero++;
    }
    expect(rZero).toBeGreaterThan(0);
    expect(sZero).toBeGreaterThan(0);
  });

  it('when a signature over a digest has r or s with a leading zero, then the converted form verifies', () => {
    const key = makeKmsKey('der');
    const data = Buffer.from('payload');
    const digest = createHash('sha256').update(data).digest();
    for (const shape of ['r-leading-zero', 's-leading-zero'] as const) {
      const { der } = ecdsaSignDigest(key.d, digest, shape);
      const raw = derToJose(der);
      expect(raw[shape === 'r-leading-zero' ? 0 : 32]).toBe(0);
      expect(verify('sha256', data, { key: key.publicKey, dsaEncoding: 'ieee-p1363' }, raw)).toBe(true);
    }
  });

  it('when the input is not a DER ECDSA signature, then it is rejected with a reason', () => {
    const good = derSignature(int('11'.repeat(32)), int('22'.repeat(32)));
    expect(() => derToJose(Buffer.from([0x31, 0x00]))).toThrow('not a SEQUENCE');
    expect(() => derToJose(good.subarray(0, good.length - 1))).toThrow('SEQUENCE length');
    expect(() => derToJose(Buffer.concat([good, Buffer.from([0])]))).toThrow('SEQUENCE length');
    const tooLong = derSignature(int('11'.repeat(33)), int('22'.repeat(32)));
    expect(() => derToJose(tooLong)).toThrow('r is longer than 32 bytes');
    const negative = Buffer.from([0x30, 0x06, 0x02, 0x01, 0x80, 0x02, 0x01, 0x01]);
    expect(() => derToJose(negative)).toThrow('r is negative');
    const notInteger = Buffer.from([0x30, 0x06, 0x04, 0x01, 0x01, 0x02, 0x01, 0x01]);
    expect(() => derToJose(notInteger)).toThrow('r is not an INTEGER');
  });
});
