import type { CallerContext } from '@mandate/shared/core';
import type { AuditEvent, EventData } from '@mandate/shared/events';
import { recordedEvent, relay, type IdentityDeps } from './deps';

/** A change to one of a tenant's settings documents (one per tenant: its resource id is the tenant's). */
export type SettingChange<T extends SettingEventType = SettingEventType> = T extends SettingEventType
  ? {
      type: T;
      /** The resource type its event names. */
      resource: string;
      data: EventData<T>;
    }
  : never;
type SettingEventType = 'WIDGET_CONFIG_UPDATED' | 'ACCESS_BASELINE_SAVED';

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
  const events = [
    recordedEvent(deps, { ...change, tenantId, resource: { type: change.resource, id: tenantId } }, caller),
  ];
  if ((await write(events)) === false) return false;
  await relay(deps, events);
  return true;
}
