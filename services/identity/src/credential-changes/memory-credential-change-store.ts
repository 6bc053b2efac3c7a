import {
  RECENT_CHANGES_MAX,
  changesAfter,
  type ChangesSince,
  type CredentialChange,
  type CredentialChangeStore,
} from './credential-change-store';

/** The embedded mode's credential epoch: one counter and the recent changes, in memory. */
export class MemoryCredentialChangeStore implements CredentialChangeStore {
  private epoch = 0;
  private recent: CredentialChange[] = [];

  async record(changes: CredentialChange[]): Promise<number> {
    this.epoch += changes.length;
    this.recent = [...this.recent, ...changes.map((c) => ({ ...c }))].slice(-RECENT_CHANGES_MAX);
    return this.epoch;
  }

  async since(since?: number): Promise<ChangesSince> {
    const changes = changesAfter(this.epoch, this.recent, since);
    return { epoch: this.epoch, changes: changes && changes.map((c) => ({ ...c })) };
  }
}
