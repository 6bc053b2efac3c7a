import type { Mandate } from '../domain/mandate';

/** What a read needs to know about the request it serves. */
export interface ReadContext {
  /** The caller's tenant; a mandate of any other tenant reads as absent. */
  tenantId: string;
  /** An internal token for the mandates service, minted for the caller, so that service scopes the read itself. */
  internalToken: string;
  requestId?: string;
}

/**
 * Where verify gets mandates from. Kept to one read so a snapshot cache can sit in front of
 * the HTTP adapter later without touching the route.
 */
export interface MandateReader {
  /** The mandate, or null when it is absent or another tenant's. */
  get(ctx: ReadContext, mandateId: string): Promise<Mandate | null>;
  /**
   * The amount of the mandate's budget available now (docs/API.md#budgets), read from the mandates
   * service (totals change with every authorization, not with the mandate's version); absent:
   * budgets are not checked. Throws (503) when it cannot be read.
   */
  budgetAvailable?(ctx: ReadContext, mandateId: string): Promise<number>;
  /** For /readyz: 'ok' or a short description of what is wrong. */
  check(): Promise<string>;
  close(): Promise<void>;
}
