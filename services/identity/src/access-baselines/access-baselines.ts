import type { CallerContext } from '@mandate/shared/core';
import { nowIso, type IdentityDeps } from '../common/deps';
import { saveTenantSetting } from '../common/tenant-settings';
import { ConcurrentModification } from '../common/errors';
import { MAX_SNAPSHOT_ITEMS, type AccessBaseline, type AccessSnapshot } from './access-baseline';

/** null until the tenant saves one. */
export async function getAccessBaseline(
  deps: IdentityDeps,
  tenantId: string,
): Promise<AccessBaseline | null> {
  return deps.store.accessBaselines.get(tenantId);
}

/** The tenant's access configuration now: keys, role assignments (any status) and widget origins. */
export async function snapshotAccess(deps: IdentityDeps, tenantId: string): Promise<AccessSnapshot> {
  const [keys, assignments, widget] = await Promise.all([
    deps.store.apiKeys.list(tenantId, { limit: MAX_SNAPSHOT_ITEMS + 1 }),
    deps.store.roleAssignments.list(tenantId, { limit: MAX_SNAPSHOT_ITEMS + 1 }),
    deps.store.widgetConfigs.get(tenantId),
  ]);
  return {
    api_keys: keys.slice(0, MAX_SNAPSHOT_ITEMS).map((k) => ({
      key_id: k.key_id,
      name: k.name,
      scopes: [...k.scopes],
      status: k.status,
    })),
    role_assignments: assignments.slice(0, MAX_SNAPSHOT_ITEMS).map((a) => ({
      id: a.id,
      subject_id: a.subject_id,
      roles: [...a.roles],
      status: a.status,
    })),
    widget_allowed_origins: [...(widget?.allowed_origins ?? [])],
    truncated: keys.length > MAX_SNAPSHOT_ITEMS || assignments.length > MAX_SNAPSHOT_ITEMS,
  };
}

/**
 * Saves the access configuration as it is now as the tenant's baseline, replacing the previous
 * one, with ACCESS_BASELINE_SAVED (counts only) in the same write. A concurrent save stamped later
 * wins: this one then answers 409 and changes nothing.
 */
export async function saveAccessBaseline(
  deps: IdentityDeps,
  tenantId: string,
  caller: CallerContext,
): Promise<AccessBaseline> {
  // Stamped before the reads: a change racing the save is then in the snapshot, after saved_at in
  // the audit trail, or both, never in neither (the drift page reads events since saved_at).
  const savedAt = nowIso(deps);
  const snapshot = await snapshotAccess(deps, tenantId);
  const baseline: AccessBaseline = {
    tenant_id: tenantId,
    saved_at: savedAt,
    saved_by: { ...caller.actor },
    snapshot,
  };
  const saved = await saveTenantSetting(
    deps,
    tenantId,
    {
      type: 'ACCESS_BASELINE_SAVED',
      resource: 'access_baseline',
      data: {
        saved_at: baseline.saved_at,
        api_keys: snapshot.api_keys.length,
        role_assignments: snapshot.role_assignments.length,
        widget_allowed_origins: snapshot.widget_allowed_origins.length,
        truncated: snapshot.truncated,
      },
    },
    (events) => deps.store.accessBaselines.put(baseline, events),
    caller,
  );
  if (!saved) throw new ConcurrentModification('The access baseline');
  return baseline;
}
