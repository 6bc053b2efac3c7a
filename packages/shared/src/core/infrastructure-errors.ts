import { amqpNodes } from './amqp-url';
import { redactUrl } from './redact-url';

/**
 * A start that failed on its infrastructure (docs/TROUBLESHOOTING.md, "At start: infrastructure"): one line that
 * names the variable, the URL without its password, and what to check. runService prints it as
 * `infrastructure error: …` and exits 1, with no stack trace.
 */
export class InfrastructureError extends Error {
  constructor(
    readonly line: string,
    options?: { cause?: unknown },
  ) {
    super(line, options);
    this.name = 'InfrastructureError';
  }
}

/** The URLs a service was given, as its configuration has them. */
export interface InfrastructureUrls {
  AMQP_URL?: string;
  REDIS_URL?: string;
  MONGO_URL?: string;
  /** Set: REDIS_URL's host is not used, these nodes are where Redis is (redis-target.ts). */
  REDIS_CLUSTER_NODES?: string;
}

type Variable = 'AMQP_URL' | 'REDIS_URL' | 'MONGO_URL';
const WHAT: Record<Variable, string> = { AMQP_URL: 'RabbitMQ', REDIS_URL: 'Redis', MONGO_URL: 'MongoDB' };

/** RabbitMQ's refusals of a login or a vhost: a configuration to fix, not an outage to wait out. */
export function isBrokerRefusal(err: unknown): boolean {
  // amqplib reports a vhost refused at connection.open only as a close instead of its open-ok.
  return /ACCESS[-_]REFUSED|NOT[-_]ALLOWED|Expected ConnectionOpenOk/.test(messageOf(err));
}

function messageOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const nested = (err as { cause?: unknown; errors?: unknown[] }).errors ?? [];
  return [err.message, ...nested.map(messageOf)].join(' ');
}

/** The vhost an AMQP URL names: its path, `/` when it has none. */
function vhostOf(url: string): string {
  try {
    const path = new URL(nodesOf(url)[0]!).pathname;
    return path.length > 1 ? decodeURIComponent(path.slice(1)) : '/';
  } catch {
    return '?';
  }
}

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ECONNRESET: 'connection reset',
};

/** The `host:port` a network error names (node's `address`/`port`, or in its message). */
function endpointOf(err: unknown): string | undefined {
  const e = err as { address?: string; port?: number; hostname?: string };
  if (e.address && e.port) return `${e.address}:${e.port}`;
  const m = /(?:ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN) ([^\s,]+)/.exec(messageOf(err));
  return m?.[1];
}

function hostPortOf(url: string): string[] {
  // AMQP_URL may list the nodes of a cluster: every host:port of them.
  if (/^amqps?:/.test(url) && url.includes(',')) return nodesOf(url).flatMap(hostPortOf);
  try {
    const u = new URL(url.replace(/^mongodb\+srv:/, 'mongodb:'));
    // A MongoDB URL may list several members: every host:port of them.
    const hosts = /^mongodb/.test(url)
      ? url.replace(/^[^@]*@|^mongodb(\+srv)?:\/\//, '').split('/')[0]!
      : u.host;
    const defaults: Record<string, string> = {
      'amqp:': '5672',
      'amqps:': '5671',
      'redis:': '6379',
      'rediss:': '6379',
    };
    return hosts.split(',').flatMap((h) => {
      const withPort = /:\d+$/.test(h) ? h : `${h}:${defaults[u.protocol] ?? '27017'}`;
      return [withPort, withPort.replace(/^localhost:/, '127.0.0.1:')];
    });
  } catch {
    return [];
  }
}

/** Which configured URL an error is about: by its kind, else by the endpoint it names. */
function variableOf(err: unknown, urls: InfrastructureUrls): Variable | undefined {
  const set = (Object.keys(WHAT) as Variable[]).filter((v) => urls[v]);
  const name = err instanceof Error ? err.name : '';
  const stack = err instanceof Error ? (err.stack ?? '') : '';
  if (isBrokerRefusal(err) || /amqplib/.test(stack)) return set.find((v) => v === 'AMQP_URL');
  if (/^Mongo/.test(name) || /[\\/]mongodb[\\/]/.test(stack)) return set.find((v) => v === 'MONGO_URL');
  if (/[\\/]ioredis[\\/]/.test(stack) || /WRONGPASS|NOAUTH/.test(messageOf(err)))
    return set.find((v) => v === 'REDIS_URL');
  const endpoint = endpointOf(err);
  if (endpoint) return set.find((v) => hostPortOf(urls[v]!).includes(endpoint));
  return undefined;
}

/**
 * The one line for a start that failed on RabbitMQ, Redis or MongoDB, or undefined when the
 * error is not about one of them: unreachable, a refused password, an unknown vhost.
 */
export function infrastructureProblem(err: unknown, urls: InfrastructureUrls): string | undefined {
  const variable = variableOf(err, urls);
  if (!variable) return undefined;
  const what = WHAT[variable];
  // A Cluster's nodes are in REDIS_CLUSTER_NODES; REDIS_URL holds only its password.
  const cluster = variable === 'REDIS_URL' ? urls.REDIS_CLUSTER_NODES : undefined;
  const at = cluster
    ? `the Redis Cluster via ${cluster}`
    : `${what} at ${redactUrl(urls[variable]!, variable)}`;
  const message = messageOf(err);
  if (/ACCESS[-_]REFUSED/.test(message) || /WRONGPASS|NOAUTH|invalid username-password/i.test(message))
    return `${variable}: ${at} refused the user name or password: check the credentials in ${variable} (or ${variable}_FILE)`;
  if (/Authentication failed/i.test(message))
    return `${variable}: ${at} refused the user name or password: check the credentials in ${variable} (or ${variable}_FILE) and its authSource`;
  if (/NOT[-_]ALLOWED|Expected ConnectionOpenOk/.test(message))
    return `${variable}: ${at} refused the vhost "${vhostOf(urls[variable]!)}": check that the vhost (the URL's path) exists and the user may use it (rabbitmqctl list_vhosts, list_permissions)`;
  const code = (err as { code?: string }).code ?? /\b(E[A-Z]+)\b/.exec(message)?.[1];
  const reason =
    (code && REASONS[code]) ?? (/Server selection timed out/i.test(message) ? 'timed out' : undefined);
  // Reached, but it refused what the service asked at start (an index, a command): say what it said.
  if (!reason && /^Mongo(Server|Bulkwrite|Write)Error$/i.test(err instanceof Error ? err.name : ''))
    return `${variable}: ${at} refused a command at start: ${message.split('\n')[0]}`;
  return `${cluster ? 'REDIS_CLUSTER_NODES' : variable}: cannot reach ${at}${reason ? ` (${reason})` : ''}: check that ${what} runs there and that this host can reach it (host, port, firewall, TLS)`;
}

/** An AMQP_URL's nodes, or the text itself when it does not parse as a list. */
function nodesOf(url: string): string[] {
  try {
    return amqpNodes(url);
  } catch {
    return [url];
  }
}
