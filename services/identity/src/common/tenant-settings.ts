import type { AuditEvent, CallerContext, EventType } from '@mandate/shared';
import { recordedEvent, relay, type IdentityDeps } from './deps';

/** A change to one of a tenant's settings documents (one per tenant: its resource id is the tenant's). */
export interface SettingChange {
  type: EventType;
  /** The resource type its event names. */
  resource: string;
  data: Record<string, unknown>;
}

/**
 * Saves a change to a tenant's settings with its event: `write` stores both in one write, then the
 * event is relayed. False, and nothing relayed, when `write` answers false (a guarded write that a
 * concurrent one beat, so its event was not stored either).
 */
export async function saveTenantSetting(
  deps: IdentityDeps,
  tenantId: string,
  change: SettingChange,
  write: (events: AuditEvent[]) => Promise<boolean | void>,
  caller?: CallerContext,
): Promise<boolean> {
  const { type, resource, data } = change;
  const events = [
    recordedEvent(deps, { type, tenantId, resource: { type: resource, id: tenantId }, data }, caller),
  ];
  if ((await write(events)) === false) return false;
  await relay(deps, events);
  return true;
}
