import { generateKeyPairSync, randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { internalTokens, newId } from '@mandate/shared/core';
import { amqpTopology } from '@mandate/shared/events';
import { deleteAmqpTopology } from '@mandate/shared/testing';
import {
  LOCAL_AMQP_URL,
  LOCAL_REDIS_URL,
  freePort,
  startService,
  startServices,
  type Runtime,
  type ServiceName,
  type ServiceProcess,
  type Services,
} from '../../scripts/services';
import { topologyEnv } from './redis-topology';

export const AMQP_URL = process.env.AMQP_URL ?? LOCAL_AMQP_URL;
export const REDIS_URL = process.env.REDIS_URL ?? LOCAL_REDIS_URL;

export { freePort, startService, type ServiceName, type ServiceProcess };
export { eventually } from './eventually';

/**
 * Processes of stacks still starting. A test file's hook can time out while its stack starts (the
 * launcher waits up to two minutes for a slow service on a loaded machine, longer than most hook
 * timeouts): the test's own afterAll then has no stack to stop, and without this the processes
 * would outlive the file, spending the machine's CPU for the rest of the run.
 */
const starting = new Set<ServiceProcess>();
const pendingStarts = new Set<Promise<unknown>>();
let fileEnded = false;
if (typeof afterAll === 'function')
  afterAll(async () => {
    fileEnded = true;
    await Promise.all([...starting].map((p) => p.stop('SIGKILL')));
    // A start whose processes were killed fails promptly; its own cleanup (the stack's queues and
    // Redis keys) then runs while this file's environment still exists.
    await Promise.allSettled([...pendingStarts]);
  }, 60_000);

export interface Stack {
  gateway: ServiceProcess;
  services: Services['services'];
  /** Every process of each service behind the gateway (services[name] is the first). */
  replicas: Services['replicas'];
  operatorToken: string;
  internalSecret: string;
  /** Mandates' LOCAL_SIGNING_KEY (a process of its own needs one): pass it to a restarted mandates. */
  signingKey: string;
  namespace: string;
  /** REDIS_PREFIX of every process: the stack's keys are `<redisPrefix>…`, deleted by stop(). */
  redisPrefix: string;
  stop(): Promise<void>;
}

/**
 * The five services as separate processes against the real RabbitMQ and Redis, with their own
 * AMQP namespace so parallel test files never share queues.
 */
export interface StackOptions {
  /** How many processes of verify to start (default 1); the gateway balances across them. */
  replicas?: Partial<Record<'verify', number>>;
  /** The services' TypeScript through tsx (default), or the bundles `npm run build` wrote. */
  runtime?: Runtime;
  /** The TEST wallet's defaults, as `npm run start:services` sets them (scripts/local-wallet.ts). */
  localWallet?: boolean;
}

/** The processes of `npm run start:services` (scripts/services.ts), each stack in its own namespace. */
export function startStack(
  extraEnv: Partial<Record<ServiceName | 'all', Record<string, string>>> = {},
  options: StackOptions = {},
): Promise<Stack> {
  const start = startStackProcesses(extraEnv, options);
  pendingStarts.add(start);
  const settled = () => void pendingStarts.delete(start);
  start.then(settled, settled);
  return start;
}

async function startStackProcesses(
  extraEnv: Partial<Record<ServiceName | 'all', Record<string, string>>>,
  options: StackOptions,
): Promise<Stack> {
  const namespace = `e2e-${newId('req')}`;
  const redisPrefix = `${namespace}:`;
  const internalSecret = randomBytes(32).toString('hex');
  const operatorToken = randomBytes(24).toString('hex');
  const signingKey = newSigningKey();
  const { all, ...perService } = extraEnv;
  const spawned: ServiceProcess[] = [];
  try {
    const started = await startServices({
      env: {
        INTERNAL_TOKEN_SECRET: internalSecret,
        AMQP_URL,
        AMQP_NAMESPACE: namespace,
        REDIS_URL,
        REDIS_PREFIX: redisPrefix,
        // The jest project's Redis topology (Sentinel or Cluster), else the shared node above; its
        // private deployment is dropped with the run, so the key clean-up below is the node's only.
        ...topologyEnv(),
        ...all,
      },
      extra: {
        ...perService,
        mandates: { LOCAL_SIGNING_KEY: signingKey, ...perService.mandates },
        gateway: {
          OPERATOR_TOKEN: operatorToken,
          // Every test client is 127.0.0.1 and the suites send wrong credentials on purpose; the
          // failed-authentication limit has its own tests (services/gateway/test/limits.test.ts).
          AUTH_FAILURE_LIMIT_PER_MINUTE: '1000000',
          ...perService.gateway,
        },
      },
      verifyReplicas: options.replicas?.verify ?? 1,
      runtime: options.runtime,
      localWallet: options.localWallet,
      onSpawn: (p) => {
        spawned.push(p);
        starting.add(p);
        // Spawned after the file ended (its start outlived a hook's timeout): nobody will stop it.
        if (fileEnded) void p.stop('SIGKILL');
      },
    });
    for (const p of spawned) starting.delete(p);
    if (fileEnded) {
      await started.stop();
      throw new Error('the stack finished starting after its test file had ended; stopped');
    }
    return {
      gateway: started.gateway,
      services: started.services,
      replicas: started.replicas,
      operatorToken,
      internalSecret,
      signingKey,
      namespace,
      redisPrefix,
      async stop() {
        await started.stop();
        await deleteTopology(namespace);
        await deleteRedisKeys(`${redisPrefix}*`);
      },
    };
  } catch (err) {
    for (const p of spawned) starting.delete(p);
    await deleteTopology(namespace).catch(() => undefined);
    await deleteRedisKeys(`${redisPrefix}*`).catch(() => undefined);
    throw err;
  }
}

/** A private EC P-256 JWK, as LOCAL_SIGNING_KEY takes it. */
export function newSigningKey(): string {
  return JSON.stringify(
    generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }),
  );
}

/** Removes the keys a stack left in Redis (everything under its REDIS_PREFIX), so runs do not accumulate. */
export async function deleteRedisKeys(pattern: string): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

export const deleteTopology = (namespace: string) => deleteAmqpTopology(amqpTopology(namespace), AMQP_URL);

/** The README walk-through's mandate body: user_alice lets agent_42 make EUR payments (max_amount 50000). */
export const README_MANDATE = {
  principal: { id: 'user_alice', type: 'person' },
  delegate: { id: 'agent_42', type: 'agent' },
  scope: { actions: ['payments:*'], constraints: { max_amount: 50000, currency: 'EUR' } },
};

/** A small JSON client for the public API. */
export function apiClient(baseUrl: string) {
  return async function api(
    method: string,
    path: string,
    options: { auth?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: any; headers: Headers; text: string }> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.auth) headers.authorization = `Bearer ${options.auth}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(baseUrl + path, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    return { status: res.status, body, headers: res.headers, text };
  };
}

/** The mandate the smoke checks create through the gateway: user_alice's agent_bot, any payments action. */
export function createPaymentsMandate(api: ReturnType<typeof apiClient>, auth: string) {
  return api('POST', '/v1/mandates', {
    auth,
    body: {
      principal: 'user_alice',
      delegate: { id: 'agent_bot', type: 'agent' },
      scope: { actions: ['payments:*'] },
    },
  });
}

export interface CreatedTenant {
  tenant: { id: string; plan: string };
  api_key: { key_id: string; api_key: string };
  /** `tenantId:apiKey`, as sent after `Bearer `. */
  auth: string;
}

/** The operator creates a tenant through the gateway; fails the test unless it answers 201. */
export async function createTenant(
  stack: Pick<Stack, 'operatorToken'> & { gateway: { url: string } },
  body: { name: string; plan?: 'beta' | 'enterprise' },
  baseUrl = stack.gateway.url,
): Promise<CreatedTenant> {
  const res = await apiClient(baseUrl)('POST', '/v1/platform/tenants', { auth: stack.operatorToken, body });
  if (res.status !== 201) throw new Error(`creating tenant ${body.name} answered ${res.status}: ${res.text}`);
  return { ...res.body, auth: `${res.body.tenant.id}:${res.body.api_key.api_key}` };
}

/** A verify process's counters (GET /internal/v1/metrics), read as the system with the stack's internal secret. */
export async function verifyCounters(
  internalSecret: string,
  verifyUrl: string,
  requestId: string,
): Promise<Record<string, number>> {
  const token = await internalTokens(internalSecret).mint(
    { tenantId: null, actor: { type: 'system' }, permissions: [], requestId },
    'verify',
  );
  const res = await fetch(`${verifyUrl}/internal/v1/metrics`, { headers: { 'x-internal-token': token } });
  return (await res.json()) as Record<string, number>;
}

/**
 * Creates a mandate, asks verify, revokes it and asks again: what the stack answered each time.
 * A stack whose snapshots work says 201, ALLOW, 200, DENY MANDATE_REVOKED.
 */
export async function revokeThenVerify(
  stack: Stack,
  auth: string,
): Promise<{ created: number; before: string; revoked: number; after: string }> {
  const api = apiClient(stack.gateway.url);
  const created = await api('POST', '/v1/mandates', {
    auth,
    body: {
      principal: { id: 'user_1', type: 'person' },
      delegate: { id: 'agent_1', type: 'agent' },
      scope: { actions: ['payments:*'] },
    },
  });
  const ask = async () => {
    const res = await api('POST', '/v1/verify', {
      auth,
      body: { mandate_id: created.body.id, action: 'payments:create' },
    });
    return [res.body.decision, res.body.reason].join(' ');
  };
  const before = await ask();
  const revoked = (await api('POST', `/v1/mandates/${created.body.id}/revoke`, { auth, body: {} })).status;
  return { created: created.status, before, revoked, after: await ask() };
}
