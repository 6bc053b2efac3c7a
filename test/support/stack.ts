import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import Redis from 'ioredis';
import { amqpTopology, newId } from '@mandate/shared';
import { deleteAmqpTopology } from '@mandate/shared/src/testing';

export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROOT = path.resolve(__dirname, '../..');

export type ServiceName = 'gateway' | 'mandates' | 'verify' | 'identity' | 'audit';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface ServiceProcess {
  name: string;
  url: string;
  child: ChildProcess;
  output: string[];
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts one service as its own OS process, the way main.ts runs in production, and waits for /healthz. */
export async function startService(
  name: ServiceName,
  env: Record<string, string>,
  label: string = name,
): Promise<ServiceProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'services', name, 'src', 'main.ts')],
    {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const output: string[] = [];
  child.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${label} exited during start:\n${output.join('')}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${label} did not become healthy:\n${output.join('')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    name: label,
    url,
    child,
    output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

export interface Stack {
  gateway: ServiceProcess;
  services: Record<Exclude<ServiceName, 'gateway'>, ServiceProcess>;
  /** Every process of each service behind the gateway (services[name] is the first). */
  replicas: Record<Exclude<ServiceName, 'gateway'>, ServiceProcess[]>;
  operatorToken: string;
  internalSecret: string;
  namespace: string;
  stop(): Promise<void>;
}

/**
 * The five services as separate processes against the real RabbitMQ and Redis, with their own
 * AMQP namespace so parallel test files never share queues.
 */
export interface StackOptions {
  /** How many processes of verify to start (default 1); the gateway balances across them. */
  replicas?: Partial<Record<'verify', number>>;
}

export async function startStack(
  extraEnv: Partial<Record<ServiceName | 'all', Record<string, string>>> = {},
  options: StackOptions = {},
): Promise<Stack> {
  const namespace = `e2e-${newId('req')}`;
  const rateLimitPrefix = `e2e-rl-${namespace}`;
  const internalSecret = randomBytes(32).toString('hex');
  const operatorToken = randomBytes(24).toString('hex');
  const common = {
    INTERNAL_TOKEN_SECRET: internalSecret,
    AMQP_URL,
    AMQP_NAMESPACE: namespace,
    REDIS_URL,
    ...extraEnv.all,
  };
  // Every process started so far, so a failed start never leaves orphans behind.
  const started: ServiceProcess[] = [];
  const track = async (p: Promise<ServiceProcess>) => {
    const service = await p;
    started.push(service);
    return service;
  };
  try {
    const mandatesPort = String(await freePort());
    const [identity, mandates, audit] = await Promise.all([
      track(startService('identity', { ...common, ...extraEnv.identity })),
      track(startService('mandates', { ...common, PORT: mandatesPort, ...extraEnv.mandates })),
      // The evidence export reads from mandates; its port is chosen up front so both start at once.
      track(
        startService('audit', {
          ...common,
          MANDATES_URL: `http://127.0.0.1:${mandatesPort}`,
          ...extraEnv.audit,
        }),
      ),
    ]);
    const verifyReplicas = await Promise.all(
      Array.from({ length: options.replicas?.verify ?? 1 }, (_, i) =>
        track(
          startService(
            'verify',
            { ...common, MANDATES_URL: mandates.url, ...extraEnv.verify },
            i === 0 ? 'verify' : `verify-${i + 1}`,
          ),
        ),
      ),
    );
    const verify = verifyReplicas[0]!;
    const gateway = await track(
      startService('gateway', {
        ...common,
        OPERATOR_TOKEN: operatorToken,
        MANDATES_URL: mandates.url,
        VERIFY_URL: verifyReplicas.map((v) => v.url).join(','),
        IDENTITY_URL: identity.url,
        AUDIT_URL: audit.url,
        RATE_LIMIT_PREFIX: rateLimitPrefix,
        // Every test client is 127.0.0.1 and the suites send wrong credentials on purpose; the
        // failed-authentication limit has its own tests (services/gateway/test/limits.test.ts).
        AUTH_FAILURE_LIMIT_PER_MINUTE: '1000000',
        ...extraEnv.gateway,
      }),
    );
    const services = { identity, mandates, audit, verify };
    const replicas = { identity: [identity], mandates: [mandates], audit: [audit], verify: verifyReplicas };
    return {
      gateway,
      services,
      replicas,
      operatorToken,
      internalSecret,
      namespace,
      async stop() {
        await gateway.stop();
        await Promise.all(
          Object.values(replicas)
            .flat()
            .map((s) => s.stop()),
        );
        await deleteTopology(namespace);
        await deleteRedisKeys(`${rateLimitPrefix}*`);
      },
    };
  } catch (err) {
    await Promise.all(started.map((s) => s.stop('SIGKILL')));
    await deleteTopology(namespace).catch(() => undefined);
    throw err;
  }
}

/** Removes the keys a stack left in Redis (its rate-limit counters), so runs do not accumulate. */
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

export interface CreatedTenant {
  tenant: { id: string; plan: string };
  api_key: { key_id: string; api_key: string };
  /** `tenantId:apiKey`, as sent after `Bearer `. */
  auth: string;
}

/** The operator creates a tenant through the gateway; fails the test unless it answers 201. */
export async function createTenant(
  stack: Pick<Stack, 'gateway' | 'operatorToken'>,
  body: { name: string; plan?: 'beta' | 'enterprise' },
  baseUrl = stack.gateway.url,
): Promise<CreatedTenant> {
  const res = await apiClient(baseUrl)('POST', '/v1/platform/tenants', { auth: stack.operatorToken, body });
  if (res.status !== 201) throw new Error(`creating tenant ${body.name} answered ${res.status}: ${res.text}`);
  return { ...res.body, auth: `${res.body.tenant.id}:${res.body.api_key.api_key}` };
}

/** Polls until `check` returns a value (not undefined) or the time runs out. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
