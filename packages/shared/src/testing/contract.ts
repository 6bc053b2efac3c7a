/**
 * Runs one store contract suite against every adapter. The MongoDB half needs a server, which
 * this machine cannot run: without MONGO_URL it is reported as skipped, with the reason in its name.
 */
export interface AdapterFactory<S> {
  name: string;
  /** Returns a fresh store and a cleanup; `undefined` means the adapter cannot run here. */
  create: () => Promise<{ store: S; close: () => Promise<void> }>;
  skipReason?: string;
}

export const MONGO_URL = process.env.MONGO_URL;
export const mongoSkipReason = MONGO_URL
  ? undefined
  : 'skipped: MONGO_URL is not set, no MongoDB server here';

export function describeStoreContract<S>(
  storeName: string,
  adapters: AdapterFactory<S>[],
  suite: (getStore: () => S) => void,
): void {
  for (const adapter of adapters) {
    const title = `${storeName} contract — ${adapter.name} adapter${adapter.skipReason ? ` (${adapter.skipReason})` : ''}`;
    const describeFn = adapter.skipReason ? describe.skip : describe;
    describeFn(title, () => {
      let current: { store: S; close: () => Promise<void> } | undefined;
      beforeAll(async () => {
        current = await adapter.create();
      });
      afterAll(async () => {
        await current?.close();
      });
      suite(() => {
        if (!current) throw new Error('store not created');
        return current.store;
      });
    });
  }
}
