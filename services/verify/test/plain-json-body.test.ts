import { isPlainJsonBody } from '../src/http/plain-json-body';

describe('the plain JSON body the verify route reads itself', () => {
  it('when a body is plain JSON of a known length, then the fast reader takes it; anything else is left to body-parser', () => {
    const plain = (headers: Record<string, string>) =>
      isPlainJsonBody({ 'content-length': '10', ...headers });
    expect(plain({ 'content-type': 'application/json' })).toBe(true);
    expect(plain({ 'content-type': 'application/json; charset=utf-8' })).toBe(true);
    expect(plain({ 'content-type': 'Application/Problem+JSON ; Charset="UTF-8"' })).toBe(true);
    expect(plain({ 'content-type': 'application/json; charset=latin1' })).toBe(false);
    expect(plain({ 'content-type': 'text/json' })).toBe(false);
    expect(plain({ 'content-type': 'application/json', 'content-encoding': 'gzip' })).toBe(false);
    expect(plain({ 'content-type': 'application/json', 'transfer-encoding': 'chunked' })).toBe(false);
    expect(plain({ 'content-type': 'application/json', 'content-length': '0' })).toBe(false);
    expect(plain({ 'content-type': 'application/json', 'content-length': String(64 * 1024 + 1) })).toBe(
      false,
    );
    expect(isPlainJsonBody({ 'content-type': 'application/json' })).toBe(false);
  });
});
