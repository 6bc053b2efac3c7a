import { systemClock, type CallerContext } from '@mandate/shared/core';
import {
  callService,
  callerFor,
  memoryAdapter,
  mongoAdapter,
  startAppOn,
  type AdapterFactory,
} from '@mandate/shared/testing';
import { createApp, type Deps } from '../src/app';
import type { IdentityStore } from '../src/store/identity-store';
import { MemoryIdentityStore } from '../src/store/memory-identity-store';
import { MongoIdentityStore } from '../src/store/mongo-identity-store';

const inMemory = memoryAdapter<IdentityStore>(() => new MemoryIdentityStore());

/** Every IdentityStore adapter: the contract suite and the component tests run on each. */
export function identityStoreAdapters(): AdapterFactory<IdentityStore>[] {
  return [inMemory, mongoAdapter('identity', (connection) => MongoIdentityStore.create(connection))];
}

export const operator: CallerContext = callerFor(null, { actor: { type: 'operator' }, permissions: [] });
export const system: CallerContext = callerFor(null, { actor: { type: 'system' }, permissions: [] });

/** The real app in-process on port 0, on the adapter's store (memory unless given); stop() closes both. */
export async function startIdentity(
  overrides: Partial<Deps> = {},
  adapter: AdapterFactory<IdentityStore> = inMemory,
) {
  const { app, server, publisher, stop } = await startAppOn('identity', adapter, (base) =>
    createApp({ ...base, clock: systemClock, ...overrides }),
  );
  const call = (method: string, path: string, options: Parameters<typeof callService>[3] = {}) =>
    callService(server.url, method, path, options);

  /** A fresh tenant made the way production makes one; returns its id, initial key id and secret. */
  const createTenant = async (body: Record<string, unknown> = {}) => {
    const res = await call('POST', '/v1/platform/tenants', {
      caller: operator,
      body: { name: 'Acme', ...body },
    });
    if (res.status !== 201) throw new Error(`tenant creation failed: ${JSON.stringify(res.body)}`);
    return {
      tenantId: res.body.tenant.id as string,
      keyId: res.body.api_key.key_id as string,
      secret: res.body.api_key.api_key as string,
      body: res.body,
    };
  };

  /** What the routes run the use cases with, for what no route triggers (the staging-key sweep). */
  const deps = app.deps;
  return { app, server, publisher, call, createTenant, deps, stop };
}

export type Identity = Awaited<ReturnType<typeof startIdentity>>;

/**
 * Six racing calls of one revocation, called directly so that the racers' reads and writes
 * interleave on either store: exactly one succeeds, the rest are 409 `alreadyRevoked`, and one
 * `eventType` event about `resourceId` is recorded.
 */
export async function expectOneOfRacingRevocations(
  svc: Identity,
  revoke: () => Promise<unknown>,
  expected: { tenantId: string; resourceId: string; eventType: string; alreadyRevoked: string },
): Promise<void> {
  const results = await Promise.allSettled(Array.from({ length: 6 }, revoke));
  expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  for (const r of results.filter((r) => r.status === 'rejected'))
    expect(r.reason).toMatchObject({ status: 409, message: expected.alreadyRevoked });
  const revoked = svc.publisher
    .forTenant(expected.tenantId)
    .filter((e) => e.type === expected.eventType && e.resource?.id === expected.resourceId);
  expect(revoked).toHaveLength(1);
}

/**
 * The app started once for the enclosing describe (beforeAll) and stopped after it (afterAll).
 * The handle is filled in by beforeAll, so read it inside hooks and tests, not at describe time.
 */
export function identityForSuite(
  overrides: Partial<Deps> = {},
  adapter: AdapterFactory<IdentityStore> = inMemory,
): Identity {
  const svc = {} as Identity;
  beforeAll(async () => {
    Object.assign(svc, await startIdentity(overrides, adapter));
  });
  afterAll(async () => {
    await svc.stop();
  });
  return svc;
}
