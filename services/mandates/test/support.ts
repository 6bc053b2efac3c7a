import { newId, systemClock, type Clock } from '@mandate/shared/core';
import {
  memoryAdapter,
  mongoAdapter,
  callService,
  callerFor,
  startAppOn,
  type AdapterFactory,
  type CapturingPublisher,
} from '@mandate/shared/testing';
import { createApp, type Deps } from '../src/app';
import type { Mandate } from '../src/domain/mandate';
import { LocalSigner } from '../src/signing/local-signer';
import type { Signer } from '../src/signing/signer';
import type { MandateStore } from '../src/store/mandate-store';
import { MemoryMandateStore } from '../src/store/memory-mandate-store';
import { MongoMandateStore } from '../src/store/mongo-mandate-store';

const inMemory = memoryAdapter<MandateStore>(() => new MemoryMandateStore());

/** Every MandateStore adapter: the contract suite and the component tests run on each. */
export function mandateStoreAdapters(): AdapterFactory<MandateStore>[] {
  return [inMemory, mongoAdapter('mandates', (connection) => MongoMandateStore.create(connection))];
}

/** A stored mandate with sensible defaults; the signature is a placeholder (stores do not check it). */
export function buildMandate(overrides: Partial<Mandate> = {}): Mandate {
  const now = new Date().toISOString();
  return {
    id: newId('mdt'),
    tenant_id: 'tnt_placeholder',
    principal: { id: 'alice', type: 'person' },
    delegate: { id: 'agent-7', type: 'agent' },
    scope: { actions: ['*'] },
    state: 'ACTIVE',
    valid_from: null,
    expires_at: null,
    metadata: {},
    version: 1,
    created_at: now,
    updated_at: now,
    signature: { alg: 'ES256', kid: 'kid', jws: 'a.b.c' },
    ...overrides,
  };
}

export const failingSigner = (kid = 'broken'): Signer => ({
  kid,
  alg: 'ES256',
  sign: async () => {
    throw new Error('KMS unreachable');
  },
  publicJwks: async () => [],
});

let sharedSigner: Promise<LocalSigner> | undefined;
const localSigner = () => (sharedSigner ??= LocalSigner.create());

export interface RunningService {
  url: string;
  deps: Deps;
  publisher: CapturingPublisher;
  stop(): Promise<void>;
}

/** The real app in-process on port 0 with the adapter's store (memory unless given) and a capturing publisher. */
export async function startService(
  overrides: { clock?: Clock; signer?: Signer; identityVerifications?: Deps['identityVerifications'] } = {},
  adapter: AdapterFactory<MandateStore> = inMemory,
): Promise<RunningService> {
  const signer = overrides.signer ?? (await localSigner());
  // createApp completes the given deps in place (relay, status lists): the test reads them as the app runs.
  let deps!: Deps;
  const { server, publisher, stop } = await startAppOn('mandates', adapter, (base) => {
    deps = {
      ...base,
      signer,
      clock: overrides.clock ?? systemClock,
      ...(overrides.identityVerifications ? { identityVerifications: overrides.identityVerifications } : {}),
    };
    return createApp(deps);
  });
  return { url: server.url, deps, publisher, stop };
}

/** A running service and its public API called as a key of `tenantId`. */
export interface SuiteService extends RunningService {
  call(tenantId: string, method: string, path: string, body?: unknown): ReturnType<typeof callService>;
}

/**
 * The service started once for the enclosing describe (beforeAll) and stopped after it (afterAll).
 * The handle is filled in by beforeAll, so read it inside hooks and tests, not at describe time.
 */
export function mandatesForSuite(
  overrides: Parameters<typeof startService>[0] = {},
  adapter: AdapterFactory<MandateStore> = inMemory,
): SuiteService {
  const svc = {
    call: (tenantId, method, path, body) =>
      callService(svc.url, method, path, { caller: callerFor(tenantId), body }),
  } as SuiteService;
  beforeAll(async () => {
    Object.assign(svc, await startService(overrides, adapter));
  });
  afterAll(async () => {
    await svc.stop();
  });
  return svc;
}
