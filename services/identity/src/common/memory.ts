/** One document per tenant (its configuration), held as copies: no caller shares the stored object. */
export class PerTenantDocument<T> {
  private readonly docs = new Map<string, T>();

  get(tenantId: string): T | null {
    const doc = this.docs.get(tenantId);
    return doc ? structuredClone(doc) : null;
  }

  set(tenantId: string, doc: T): void {
    this.docs.set(tenantId, structuredClone(doc));
  }
}
