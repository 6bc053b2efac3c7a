/**
 * A response body made of a stored object's named members, in the order named: how each
 * aggregate's view (`<aggregate>/http.ts`) says what of its record the API shows — and so, what it
 * never shows (secret hashes, nonces).
 */
export function pick<T extends object, const K extends keyof T>(source: T, keys: readonly K[]): Pick<T, K> {
  const body = {} as Pick<T, K>;
  for (const key of keys) body[key] = source[key];
  return body;
}
