/**
 * Scope pattern matching (SPEC §5 Mandates: "a trailing `*` segment matches any suffix").
 * Matching is exact and case-sensitive otherwise; a `*` anywhere but at the end is literal.
 */

/** Actions: exact, `*` (everything), or `prefix:*` (anything below `prefix:`, at any depth). */
export function actionMatches(pattern: string, action: string): boolean {
  if (pattern === '*' || pattern === action) return true;
  if (pattern.endsWith(':*')) return action.startsWith(pattern.slice(0, -1));
  return false;
}

/**
 * Resources: the action rule, plus any trailing `*` (`/accounts/*`, `acct_*`) matching any
 * suffix, since resource ids are not always `:`-segmented.
 */
export function resourceMatches(pattern: string, resource: string): boolean {
  if (pattern === '*' || pattern === resource) return true;
  if (pattern.endsWith('*')) return resource.startsWith(pattern.slice(0, -1));
  return false;
}

export const anyMatches = (
  patterns: readonly string[],
  value: string,
  matches: (p: string, v: string) => boolean,
) => patterns.some((p) => matches(p, value));
