/**
 * Drift monitoring's comparison: the current access configuration against a baseline's snapshot.
 * No imports: the root test suite checks it too (test/dashboard/drift-diff.test.ts).
 */
export interface KeyEntry {
  key_id: string;
  name: string;
  scopes: string[];
  status: string;
}
export interface AssignmentEntry {
  id: string;
  subject_id: string;
  roles: string[];
  status: string;
}
export interface AccessSnapshot {
  api_keys: KeyEntry[];
  role_assignments: AssignmentEntry[];
  widget_allowed_origins: string[];
  truncated: boolean;
}
export interface Difference {
  kind: 'API key' | 'Role assignment' | 'Widget origin';
  change: 'added' | 'removed' | 'changed';
  /** The key (name and id), the assignment's subject, or the origin. */
  what: string;
  detail: string;
}

const list = (xs: readonly string[]) => (xs.length ? [...xs].sort().join(', ') : 'none');
const sameSet = (a: readonly string[], b: readonly string[]) => list(a) === list(b);

/** The oldest id of a list (ids sort by creation), or '' when empty. */
const oldestId = (ids: string[]) => ids.reduce((min, id) => (min === '' || id < min ? id : min), '');

/**
 * The current access configuration against the baseline's snapshot, entry by entry. A truncated
 * side holds only the newest entries: what is older than its oldest is not compared (it would
 * read as added or removed).
 */
export function accessDiff(baseline: AccessSnapshot, current: AccessSnapshot): Difference[] {
  const out: Difference[] = [];
  const comparable = (side: AccessSnapshot, ids: (side: AccessSnapshot) => string[]) => {
    const floor = side.truncated ? oldestId(ids(side)) : '';
    return (id: string) => id >= floor;
  };
  const keyIds = (side: AccessSnapshot) => side.api_keys.map((k) => k.key_id);
  const roleIds = (side: AccessSnapshot) => side.role_assignments.map((a) => a.id);
  const keyInBaseline = comparable(baseline, keyIds);
  const keyInCurrent = comparable(current, keyIds);
  const roleInBaseline = comparable(baseline, roleIds);
  const roleInCurrent = comparable(current, roleIds);
  const keysBefore = new Map(baseline.api_keys.map((k) => [k.key_id, k]));
  const keysNow = new Map(current.api_keys.map((k) => [k.key_id, k]));
  const keyName = (k: KeyEntry) => `${k.name} (${k.key_id})`;
  for (const k of current.api_keys) {
    const before = keysBefore.get(k.key_id);
    if (!before) {
      if (!keyInBaseline(k.key_id)) continue;
      out.push({
        kind: 'API key',
        change: 'added',
        what: keyName(k),
        detail: `${k.status}; scopes ${list(k.scopes)}`,
      });
      continue;
    }
    const changes: string[] = [];
    if (before.status !== k.status) changes.push(`status ${before.status} → ${k.status}`);
    if (!sameSet(before.scopes, k.scopes)) changes.push(`scopes ${list(before.scopes)} → ${list(k.scopes)}`);
    if (before.name !== k.name) changes.push(`name ${before.name} → ${k.name}`);
    if (changes.length)
      out.push({ kind: 'API key', change: 'changed', what: keyName(k), detail: changes.join('; ') });
  }
  for (const k of baseline.api_keys)
    if (!keysNow.has(k.key_id) && keyInCurrent(k.key_id))
      out.push({ kind: 'API key', change: 'removed', what: keyName(k), detail: `was ${k.status}` });

  const rolesBefore = new Map(baseline.role_assignments.map((a) => [a.id, a]));
  const rolesNow = new Map(current.role_assignments.map((a) => [a.id, a]));
  for (const a of current.role_assignments) {
    const before = rolesBefore.get(a.id);
    if (!before) {
      if (!roleInBaseline(a.id)) continue;
      out.push({
        kind: 'Role assignment',
        change: 'added',
        what: a.subject_id,
        detail: `${a.status}; roles ${list(a.roles)}`,
      });
      continue;
    }
    const changes: string[] = [];
    if (before.status !== a.status) changes.push(`status ${before.status} → ${a.status}`);
    if (!sameSet(before.roles, a.roles)) changes.push(`roles ${list(before.roles)} → ${list(a.roles)}`);
    if (changes.length)
      out.push({
        kind: 'Role assignment',
        change: 'changed',
        what: a.subject_id,
        detail: changes.join('; '),
      });
  }
  for (const a of baseline.role_assignments)
    if (!rolesNow.has(a.id) && roleInCurrent(a.id))
      out.push({ kind: 'Role assignment', change: 'removed', what: a.subject_id, detail: `was ${a.status}` });

  const originsBefore = new Set(baseline.widget_allowed_origins);
  const originsNow = new Set(current.widget_allowed_origins);
  for (const o of originsNow)
    if (!originsBefore.has(o))
      out.push({ kind: 'Widget origin', change: 'added', what: o, detail: 'allowed' });
  for (const o of originsBefore)
    if (!originsNow.has(o))
      out.push({ kind: 'Widget origin', change: 'removed', what: o, detail: 'no longer allowed' });
  return out;
}
