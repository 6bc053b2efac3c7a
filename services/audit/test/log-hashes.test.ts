import crypto from 'node:crypto';
import fc from 'fast-check';
import { auditLeafBytes } from '@mandate/shared/browser';
import { merkleHasher } from '@mandate/shared/mandate';
import { hashesToBase64Url } from '../src/domain/log';
import { auditLeafHash } from '../src/store/leaf-hash';

const H = (...parts: Uint8Array[]) => crypto.createHash('sha256').update(Buffer.concat(parts)).digest();
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe("the log's hashes: leaves and their base64url", () => {
  it('when many hashes go to base64url at once, then each is its own base64url; other lengths too', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { maxLength: 40 }), (hashes) => {
        expect(hashesToBase64Url(hashes)).toEqual(hashes.map((h) => Buffer.from(h).toString('base64url')));
      }),
    );
    // A view into a larger buffer (as the tree's nodes are), and a hash of another length.
    const big = crypto.randomBytes(100);
    const mixed = [big.subarray(5, 37), big.subarray(0, 20), new Uint8Array(32).fill(0xff)];
    expect(hashesToBase64Url(mixed)).toEqual(mixed.map((h) => Buffer.from(h).toString('base64url')));
  });

  it('when an event is hashed as a leaf, then it is SHA-256(0x00 || RFC 8785 JSON with seq)', () => {
    const event = { seq: 7, id: 'evt_1', data: { b: 1, a: 'é' } };
    const bytes = Buffer.from('{"data":{"a":"é","b":1},"id":"evt_1","seq":7}', 'utf8');
    expect(hex(auditLeafHash(event))).toBe(hex(H(Buffer.from([0]), bytes)));
    // Astral characters and a lone surrogate (escaped by the canonical JSON) hash as their UTF-8.
    const odd = { seq: 8, data: { smile: '\u{1F600}', lone: '\ud800' } };
    const oddBytes = Buffer.from('{"data":{"lone":"\\ud800","smile":"\u{1F600}"},"seq":8}', 'utf8');
    expect(hex(auditLeafHash(odd))).toBe(hex(H(Buffer.from([0]), oddBytes)));
    // Past the reused input buffer (64 KiB, 3 bytes per unit at most) the JSON goes as a string;
    // the event after it goes through the buffer again.
    const big = { seq: 9, data: { s: 'é'.repeat(30_000) } };
    const bigBytes = Buffer.from(`{"data":{"s":"${'é'.repeat(30_000)}"},"seq":9}`, 'utf8');
    expect(hex(auditLeafHash(big))).toBe(hex(H(Buffer.from([0]), bigBytes)));
    expect(hex(auditLeafHash(event))).toBe(hex(H(Buffer.from([0]), bytes)));
    // The services' shortcut and the checker's construction (merkleHasher over the leaf's bytes) agree.
    for (const e of [event, odd, big])
      expect(hex(auditLeafHash(e))).toBe(hex(merkleHasher.leafHash(auditLeafBytes(e))));
  });
});
