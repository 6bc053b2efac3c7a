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

/** One kind of entry of a snapshot, compared by id: its status, the set it grants and more fields. */
interface EntryKind<E extends { status: string }> {
  kind: Difference['kind'];
  entries(side: AccessSnapshot): E[];
  id(entry: E): string;
  /** How a difference names the entry. */
  what(entry: E): string;
  /** The set it grants, and that set's name in a detail. */
  grants: { name: string; of(entry: E): string[] };
  /** Changes of further fields, as "field before → now". */
  otherChanges?(before: E, now: E): string[];
}

const API_KEYS: EntryKind<KeyEntry> = {
  kind: 'API key',
  entries: (side) => side.api_keys,
  id: (k) => k.key_id,
  what: (k) => `${k.name} (${k.key_id})`,
  grants: { name: 'scopes', of: (k) => k.scopes },
  otherChanges: (before, k) => (before.name !== k.name ? [`name ${before.name} → ${k.name}`] : []),
};

const ROLE_ASSIGNMENTS: EntryKind<AssignmentEntry> = {
  kind: 'Role assignment',
  entries: (side) => side.role_assignments,
  id: (a) => a.id,
  what: (a) => a.subject_id,
  grants: { name: 'roles', of: (a) => a.roles },
};

/**
 * One kind of entry now against the baseline: added, changed, then removed. A truncated side holds
 * only the newest entries: what is older than its oldest is not compared (it would read as added
 * or removed).
 */
function entryDiff<E extends { status: string }>(
  of: EntryKind<E>,
  baseline: AccessSnapshot,
  current: AccessSnapshot,
): Difference[] {
  const comparable = (side: AccessSnapshot) => {
    const floor = side.truncated ? oldestId(of.entries(side).map(of.id)) : '';
    return (id: string) => id >= floor;
  };
  const inBaseline = comparable(baseline);
  const inCurrent = comparable(current);
  const before = new Map(of.entries(baseline).map((e) => [of.id(e), e]));
  const now = new Map(of.entries(current).map((e) => [of.id(e), e]));
  const difference = (change: Difference['change'], e: E, detail: string): Difference => ({
    kind: of.kind,
    change,
    what: of.what(e),
    detail,
  });
  const out: Difference[] = [];
  for (const e of of.entries(current)) {
    const was = before.get(of.id(e));
    if (!was) {
      if (inBaseline(of.id(e)))
        out.push(difference('added', e, `${e.status}; ${of.grants.name} ${list(of.grants.of(e))}`));
      continue;
    }
    const changes: string[] = [];
    if (was.status !== e.status) changes.push(`status ${was.status} → ${e.status}`);
    const [granted, grants] = [of.grants.of(was), of.grants.of(e)];
    if (!sameSet(granted, grants)) changes.push(`${of.grants.name} ${list(granted)} → ${list(grants)}`);
    changes.push(...(of.otherChanges?.(was, e) ?? []));
    if (changes.length) out.push(difference('changed', e, changes.join('; ')));
  }
  for (const e of of.entries(baseline))
    if (!now.has(of.id(e)) && inCurrent(of.id(e))) out.push(difference('removed', e, `was ${e.status}`));
  return out;
}

/** The current access configuration against the baseline's snapshot, entry by entry. */
export function accessDiff(baseline: AccessSnapshot, current: AccessSnapshot): Difference[] {
  const out = [...entryDiff(API_KEYS, baseline, current), ...entryDiff(ROLE_ASSIGNMENTS, baseline, current)];
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
