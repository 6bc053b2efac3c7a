import type { Logger } from '@mandate/shared';
import { mandateSchema, type Mandate } from '../domain/mandate';
import type { VerifyMetrics } from '../metrics';
import type { MandateReader, ReadContext } from './mandate-reader';
import type { SnapshotSource } from './snapshot-source';

/**
 * Snapshot first, the mandates service on a miss (which also refills the snapshot there).
 * Deliberately no in-process cache: a copy held here could not be fenced by a lifecycle call,
 * and "no stale decision once the call has returned" would then depend on timing.
 */
export class SnapshotMandateReader implements MandateReader {
  private lastErrorLog = 0;

  constructor(
    private readonly snapshots: SnapshotSource,
    private readonly origin: MandateReader,
    private readonly metrics: VerifyMetrics,
    private readonly logger: Logger,
  ) {}

  async get(ctx: ReadContext, mandateId: string): Promise<Mandate | null> {
    const fromSnapshot = await this.readSnapshot(ctx, mandateId);
    if (fromSnapshot) {
      this.metrics.snapshotHits++;
      return fromSnapshot;
    }
    return this.origin.get(ctx, mandateId);
  }

  private async readSnapshot(ctx: ReadContext, mandateId: string): Promise<Mandate | null> {
    let json: string | null;
    try {
      json = await this.snapshots.read(ctx.tenantId, mandateId);
    } catch (err) {
      this.failed(err, ctx, 'snapshot store unavailable; reading from the mandates service');
      return null;
    }
    if (json === null) {
      this.metrics.snapshotMisses++;
      return null;
    }
    let parsed;
    try {
      parsed = mandateSchema.safeParse(JSON.parse(json));
    } catch {
      parsed = undefined;
    }
    // The key carries the tenant; checking the body too means a mix-up can never decide across tenants.
    if (!parsed?.success || parsed.data.tenant_id !== ctx.tenantId || parsed.data.id !== mandateId) {
      this.failed(undefined, ctx, 'unusable mandate snapshot; reading from the mandates service');
      return null;
    }
    return parsed.data;
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
