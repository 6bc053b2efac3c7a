import type { Logger } from '@mandate/shared/observability';
import type { SnapshotMac } from '@mandate/shared/mandate';
import { mandateSchema, type Mandate } from '../domain/mandate';
import type { VerifyMetrics } from '../metrics';
import type { MandateReader, ReadContext } from './mandate-reader';
import type { SnapshotSource, StoredSnapshot } from './snapshot-source';

/**
 * Snapshot first, the mandates service on a miss (which also refills the snapshot there).
 * Deliberately no in-process cache: a copy held here could not be fenced by a lifecycle call,
 * and "no stale decision once the call has returned" would then depend on timing.
 */
const PARSED_MAX = 5_000;

export class SnapshotMandateReader implements MandateReader {
  private lastErrorLog = 0;
  private lastForgeryLog = 0;
  private readonly parsed = new Map<string, Mandate>();

  constructor(
    private readonly snapshots: SnapshotSource,
    private readonly origin: MandateReader,
    private readonly metrics: VerifyMetrics,
    private readonly logger: Logger,
    /** Keyed like the mandates service's (INTERNAL_TOKEN_SECRET): only what it wrote is decided on. */
    private readonly mac: SnapshotMac,
  ) {}

  async get(ctx: ReadContext, mandateId: string): Promise<Mandate | null> {
    const fromSnapshot = await this.readSnapshot(ctx, mandateId);
    if (fromSnapshot) {
      this.metrics.snapshotHits++;
      return fromSnapshot;
    }
    return this.origin.get(ctx, mandateId);
  }

  /** Budget totals are not in the snapshot (they change without a new version): the mandates service answers. */
  async budgetAvailable(ctx: ReadContext, mandateId: string): Promise<number> {
    if (!this.origin.budgetAvailable) throw new Error('budget reads are not available');
    return this.origin.budgetAvailable(ctx, mandateId);
  }

  private async readSnapshot(ctx: ReadContext, mandateId: string): Promise<Mandate | null> {
    let snapshot: StoredSnapshot | null;
    try {
      snapshot = await this.snapshots.read(ctx.tenantId, mandateId);
    } catch (err) {
      this.failed(err, ctx, 'snapshot store unavailable; reading from the mandates service');
      return null;
    }
    if (snapshot === null) {
      this.metrics.snapshotMisses++;
      return null;
    }
    // Before parsing: a snapshot the mandates service did not write is never looked at.
    if (!this.mac.check(snapshot.json, snapshot.mac)) {
      this.rejected(ctx, mandateId);
      return null;
    }
    const mandate = this.parse(snapshot.json);
    // The key carries the tenant; checking the body too means a mix-up can never decide across tenants.
    if (!mandate || mandate.tenant_id !== ctx.tenantId || mandate.id !== mandateId) {
      this.failed(undefined, ctx, 'unusable mandate snapshot; reading from the mandates service');
      return null;
    }
    return mandate;
  }

  /**
   * JSON.parse and schema check of a snapshot, remembered by its exact text. This caches no
   * mandate: every verify still reads Redis, and only identical bytes reuse a parse (a new
   * version is new text). Callers treat the mandate as read-only.
   */
  private parse(json: string): Mandate | null {
    const known = this.parsed.get(json);
    if (known) return known;
    let parsed;
    try {
      parsed = mandateSchema.safeParse(JSON.parse(json));
    } catch {
      parsed = undefined;
    }
    if (!parsed?.success) return null;
    if (this.parsed.size >= PARSED_MAX) this.parsed.clear();
    this.parsed.set(json, Object.freeze(parsed.data));
    return parsed.data;
  }

  /**
   * A missing or wrong MAC: someone else wrote to Redis, or the services' INTERNAL_TOKEN_SECRET
   * differ. Counted every time, logged at most once a minute (a flood of forgeries must not flood the log).
   */
  private rejected(ctx: ReadContext, mandateId: string): void {
    this.metrics.snapshotMacFailures++;
    const now = Date.now();
    if (now - this.lastForgeryLog < 60_000) return;
    this.lastForgeryLog = now;
    this.logger.error(
      { requestId: ctx.requestId, mandateId, rejected: this.metrics.snapshotMacFailures },
      'mandate snapshot with a missing or invalid MAC ignored; reading from the mandates service',
    );
  }

  /** Counted every time, logged at most once a second: a Redis outage must not flood the log. */
  private failed(err: unknown, ctx: ReadContext, message: string): void {
    this.metrics.snapshotErrors++;
    const now = Date.now();
    if (now - this.lastErrorLog < 1_000) return;
    this.lastErrorLog = now;
    this.logger.warn({ err, requestId: ctx.requestId }, message);
  }

  async check(): Promise<string> {
    const origin = await this.origin.check();
    const snapshots = await this.snapshots.ping().then(
      () => 'ok',
      (err) => `degraded: snapshot store down (${(err as Error).message}); reading from the mandates service`,
    );
    return origin !== 'ok' ? origin : snapshots;
  }

  async close(): Promise<void> {
    await this.snapshots.close();
    await this.origin.close();
  }
}
