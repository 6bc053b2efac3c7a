import type { CredentialChange } from '../contract/credential-changes';

export type { CredentialChange };

/** What changed after an epoch; `changes` is null when they are no longer all known (drop everything). */
export interface ChangesSince {
  epoch: number;
  changes: CredentialChange[] | null;
}

/** How many recent changes are kept for gateways that are behind; one further behind drops everything. */
export const RECENT_CHANGES_MAX = 1000;

/**
 * The credential epoch (docs/DECISIONS.md, "Credential changes"): a counter moved by every
 * credential change, with the most recent changes, one atomic write each. The gateways compare
 * it with the epoch they last saw, a few times a second, as the safety net under the push.
 */
export interface CredentialChangeStore {
  /** Moves the epoch by one per change, keeping the changes; answers the epoch after them. */
  record(changes: CredentialChange[]): Promise<number>;
  /** The current epoch and, after `since`, its changes when all are still kept (none given: null). */
  since(since?: number): Promise<ChangesSince>;
}

/** The changes after `since` out of the kept ones, whose last is `epoch`; null when some are gone. */
export function changesAfter(
  epoch: number,
  recent: CredentialChange[],
  since: number | undefined,
): CredentialChange[] | null {
  if (since === undefined || since > epoch) return null;
  const behind = epoch - since;
  if (behind > recent.length) return null;
  return recent.slice(recent.length - behind);
}
