/**
 * KMS returns ECDSA signatures DER-encoded (SEQUENCE { INTEGER r, INTEGER s }); JWS (RFC 7518 §3.4)
 * wants the raw form r || s, each a fixed-size unsigned big-endian integer. DER integers are
 * minimal and signed, so r or s may come one byte longer (a 0x00 in front of a high bit) or
 * shorter (their own leading zero bytes dropped): both must be normalised to `size` bytes.
 */
export function derToJose(der: Uint8Array, size = 32): Uint8Array {
  const fail = (why: string): never => {
    throw new Error(`invalid DER ECDSA signature: ${why}`);
  };
  let pos = 0;
  if (der[pos++] !== 0x30) fail('not a SEQUENCE');
  const seqLength = readLength();
  if (pos + seqLength !== der.length) fail('SEQUENCE length does not match the input');
  const r = readInteger('r');
  const s = readInteger('s');
  if (pos !== der.length) fail('trailing bytes after s');
  const out = new Uint8Array(size * 2);
  out.set(r, size - r.length);
  out.set(s, size * 2 - s.length);
  return out;

  function readLength(): number {
    const first = der[pos++];
    if (first === undefined) return fail('truncated length');
    if (first < 0x80) return first;
    // Long form: a P-256 or P-384 signature never needs more than one length byte.
    if (first !== 0x81) return fail('unsupported length encoding');
    const len = der[pos++];
    if (len === undefined || len < 0x80) return fail('non-minimal length');
    return len;
  }

  function readInteger(name: string): Uint8Array {
    if (der[pos++] !== 0x02) fail(`${name} is not an INTEGER`);
    const len = readLength();
    if (len === 0 || pos + len > der.length) fail(`${name} has a bad length`);
    let bytes = der.subarray(pos, pos + len);
    pos += len;
    if (bytes[0]! & 0x80) fail(`${name} is negative`);
    let start = 0;
    while (start < bytes.length - 1 && bytes[start] === 0) start++;
    bytes = bytes.subarray(start);
    if (bytes.length > size) fail(`${name} is longer than ${size} bytes`);
    return bytes;
  }
}
