import type { Mandate } from '../domain/mandate';
import type { MandateReader, ReadContext } from './mandate-reader';

/** Tests and local experiments: mandates held in a map keyed by tenant and id. */
export class MemoryMandateReader implements MandateReader {
  private readonly mandates = new Map<string, Mandate>();

  constructor(initial: Mandate[] = []) {
    for (const m of initial) this.put(m);
  }

  /** Inserts or replaces (a new version after a lifecycle change). */
  put(mandate: Mandate): void {
    this.mandates.set(key(mandate.tenant_id, mandate.id), structuredClone(mandate));
  }

  async get(ctx: ReadContext, mandateId: string): Promise<Mandate | null> {
    const found = this.mandates.get(key(ctx.tenantId, mandateId));
    return found ? structuredClone(found) : null;
  }

  async check(): Promise<string> {
    return 'ok';
  }

  async close(): Promise<void> {}
}

const key = (tenantId: string, id: string) => `${tenantId}\u0000${id}`;
