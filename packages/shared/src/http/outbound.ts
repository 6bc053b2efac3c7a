import { lookup as dnsLookup } from 'node:dns/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { buildConnector, Client, Pool, errors as undiciErrors, type Dispatcher } from 'undici';

/**
 * Outbound requests the service makes on behalf of others (a credential's status list now,
 * webhooks later): whoever names the URL must not be able to reach the service's own network.
 * Only public unicast addresses are connected to, checked on the address the socket actually
 * connects to (resolved once, checked, then connected to by address: no DNS rebinding between
 * check and connect); redirects are not followed; the time and the body read are bounded.
 */

export type OutboundRefusalReason =
  /** Not a URL, or one carrying credentials. */
  | 'INVALID_URL'
  /** Not https (http only to an allowed loopback host). */
  | 'SCHEME'
  /** The host is, or resolves to, an address that is not public unicast. */
  | 'ADDRESS_NOT_ALLOWED'
  /** The answer was a 3xx: redirects are never followed. */
  | 'REDIRECT'
  /** The body is larger than maxBytes. */
  | 'TOO_LARGE'
  /** Connect or the whole exchange took longer than allowed. */
  | 'TIMEOUT'
  /** Allowed, but no answer: the name does not resolve, the connection or TLS failed. */
  | 'UNREACHABLE';

export class OutboundRefused extends Error {
  constructor(
    readonly reason: OutboundRefusalReason,
    detail: string,
  ) {
    super(`${reason}: ${detail}`);
    this.name = 'OutboundRefused';
  }
}

/** Resolves a host name to its addresses (tests inject one; the default is the system resolver). */
export type OutboundLookup = (hostname: string) => Promise<readonly string[]>;

export interface SafeFetchOptions {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The whole exchange, resolving and connecting included. */
  timeoutMs: number;
  /** Resolving and connecting (TLS included); defaults to the smaller of timeoutMs and 3 s. */
  connectTimeoutMs?: number;
  /** The most body bytes read. */
  maxBytes: number;
  /** A longer body: 'refuse' (default) throws TOO_LARGE; 'truncate' keeps the first maxBytes. */
  overflow?: 'refuse' | 'truncate';
  /**
   * Local development only: also allows http and https to localhost, 127.0.0.0/8 and ::1 when the
   * URL names them (a public name resolving to a loopback address is still refused).
   */
  allowLoopback?: boolean;
  lookup?: OutboundLookup;
  /**
   * Keep connections for the next requests to the same origin (a worker posting to the same
   * receivers again and again). Each new connection is still resolved and checked on connect; a
   * kept one stays with the address that was checked. Without it, one connection per request.
   */
  pool?: OutboundPool;
}

/**
 * Connections kept per origin between safeFetch calls, each opened through the checking connect
 * hook. At most `maxOrigins` origins (the least recently used one is closed beyond); idle
 * connections close after undici's keep-alive timeout. close() when done.
 */
export class OutboundPool {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly options: { maxOrigins?: number; connectionsPerOrigin?: number } = {}) {}

  /** The pool of `key` (origin and the rules it was built with), made with `connect` on first use. */
  dispatcher(key: string, origin: string, connect: buildConnector.connector, timeoutMs: number): Dispatcher {
    let pool = this.pools.get(key);
    if (pool) {
      // Most recently used last: the first entry is the one to evict.
      this.pools.delete(key);
      this.pools.set(key, pool);
      return pool;
    }
    pool = new Pool(origin, {
      connect,
      connections: this.options.connectionsPerOrigin ?? 64,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      pipelining: 1,
    });
    this.pools.set(key, pool);
    if (this.pools.size > (this.options.maxOrigins ?? 500)) {
      const [oldestKey, oldest] = this.pools.entries().next().value!;
      this.pools.delete(oldestKey);
      oldest.close().catch(() => undefined);
    }
    return pool;
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.destroy().catch(() => undefined)));
  }
}

export interface SafeFetchResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body was cut at maxBytes (overflow 'truncate' only). */
  truncated: boolean;
}

const systemLookup: OutboundLookup = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * Why an address may not be connected to, or undefined when it may. The classification is
 * ipaddr.js's special-purpose ranges: only 'unicast' (none of them) is public. IPv4-mapped IPv6 is
 * judged as the IPv4 address it carries; NAT64 (64:ff9b::/96, 64:ff9b:1::/48) is refused as such.
 */
export function addressRefusal(address: string, allowLoopback = false): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return 'not an IP address';
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    // IPv4-compatible (::a.b.c.d, deprecated by RFC 4291) is not in ipaddr's table and reads
    // as unicast: refuse it rather than guess where a stack routes it.
    else if (v6.match(IPV4_COMPATIBLE)) return 'IPv4-compatible IPv6';
  }
  const range = parsed.range();
  if (range === 'unicast') return undefined;
  if (range === 'loopback' && allowLoopback) return undefined;
  return range;
}

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/**
 * A URL's host as compared: `[::1]` → `::1` (URL and undici keep an IPv6 host's brackets), no
 * trailing dot, lower case.
 */
export const bareHost = (hostname: string) =>
  hostname
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();

/** The URL names a loopback host itself (only these may use the allowLoopback exception). */
export function namesLoopback(hostname: string): boolean {
  const host = bareHost(hostname);
  return host === 'localhost' || (isIP(host) !== 0 && addressRefusal(host) === 'loopback');
}

/**
 * Fetches `url` under the outbound rules. Resolves to the answer (any status but 3xx); throws
 * OutboundRefused with its reason otherwise. Never follows a redirect, never reads more than
 * maxBytes of body, never takes longer than timeoutMs.
 */
export async function safeFetch(url: string, options: SafeFetchOptions): Promise<SafeFetchResponse> {
  const { target, loopbackOk } = checkedUrl(url, options);
  const connectTimeoutMs = options.connectTimeoutMs ?? Math.min(options.timeoutMs, 3_000);
  const connector = checkingConnector(options.lookup ?? systemLookup, loopbackOk, connectTimeoutMs);
  const { connect } = connector;

  const pooled = options.pool;
  const client: Dispatcher = pooled
    ? pooled.dispatcher(
        `${target.origin} ${loopbackOk} ${connectTimeoutMs}`,
        target.origin,
        connect,
        options.timeoutMs,
      )
    : new Client(target.origin, {
        connect,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
        pipelining: 0,
      });
  const deadline = new AbortController();
  // undici holds an abort back until the connection is made; destroying the client also ends a
  // resolution or connect that is still pending (a pool's connect ends at its connect timeout).
  const timer = setTimeout(() => {
    deadline.abort();
    if (!pooled) client.destroy().catch(() => undefined);
  }, options.timeoutMs);
  try {
    const response = await client.request({
      method: options.method ?? 'GET',
      path: target.pathname + target.search,
      headers: options.headers,
      body: options.body,
      signal: deadline.signal,
    });
    return await readAnswer(response, options);
  } catch (error) {
    throw fetchRefusal(error, connector.refused(), deadline.signal.aborted, options.timeoutMs);
  } finally {
    clearTimeout(timer);
    if (!pooled) client.destroy().catch(() => undefined);
  }
}

/** The URL parsed and checked before anything connects: no credentials, https (or loopback http), an allowed address. */
function checkedUrl(url: string, options: SafeFetchOptions): { target: URL; loopbackOk: boolean } {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new OutboundRefused('INVALID_URL', 'not a URL');
  }
  if (target.username || target.password) throw new OutboundRefused('INVALID_URL', 'URL carries credentials');
  const hostname = bareHost(target.hostname);
  const loopbackOk = options.allowLoopback === true && namesLoopback(hostname);
  if (target.protocol !== 'https:' && !(target.protocol === 'http:' && loopbackOk)) {
    throw new OutboundRefused('SCHEME', `${target.protocol} is not allowed`);
  }
  if (isIP(hostname)) {
    const refusal = addressRefusal(hostname, loopbackOk);
    if (refusal) throw new OutboundRefused('ADDRESS_NOT_ALLOWED', `${hostname} is ${refusal}`);
  }
  return { target, loopbackOk };
}

/**
 * undici's connector, connecting only to checked addresses; `refused()` is the first refusal met
 * while connecting (undici reports connect failures in its own words). A method, not a getter: an
 * object literal's getter gives each object a map of its own, which keeps the fetch alive through
 * the scavenges (docs/PERFORMANCE.md, "Round 17: what each scavenge copied (issue 35)").
 */
function checkingConnector(
  resolve: OutboundLookup,
  loopbackOk: boolean,
  connectTimeoutMs: number,
): { connect: buildConnector.connector; refused(): OutboundRefused | undefined } {
  let refused: OutboundRefused | undefined;
  const connectTo = buildConnector({ timeout: connectTimeoutMs });
  const connect: buildConnector.connector = (connectOptions, callback) => {
    // Each connection goes to an address that was just checked, by address: nothing resolves the
    // name again between the check and the connect. TLS still verifies the certificate against the
    // name (undici takes the servername from the URL's host, not from the address connected to).
    const tryEach = (addresses: readonly string[], index: number) => {
      connectTo({ ...connectOptions, hostname: addresses[index]! }, (error, socket) => {
        if (error && index + 1 < addresses.length) return tryEach(addresses, index + 1);
        if (error) return callback(error, null);
        callback(null, socket!);
      });
    };
    checkedAddresses(bareHost(connectOptions.hostname), resolve, loopbackOk).then(
      (addresses) => tryEach(addresses, 0),
      (error: unknown) => {
        refused =
          error instanceof OutboundRefused ? error : new OutboundRefused('UNREACHABLE', String(error));
        callback(refused, null);
      },
    );
  };
  return { connect, refused: () => refused };
}

/** The answer, refused when it redirects or its body passes maxBytes (unless truncated by choice). */
async function readAnswer(
  response: Dispatcher.ResponseData,
  options: SafeFetchOptions,
): Promise<SafeFetchResponse> {
  if (response.statusCode >= 300 && response.statusCode < 400) {
    discard(response.body);
    throw new OutboundRefused('REDIRECT', `answered ${response.statusCode}; redirects are not followed`);
  }
  const declared = Number(response.headers['content-length']);
  const refuseOverflow = options.overflow !== 'truncate';
  if (refuseOverflow && Number.isFinite(declared) && declared > options.maxBytes) {
    discard(response.body);
    throw new OutboundRefused('TOO_LARGE', `body of ${declared} bytes exceeds ${options.maxBytes}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    if (size + chunk.length > options.maxBytes) {
      discard(response.body);
      if (refuseOverflow) throw new OutboundRefused('TOO_LARGE', `body exceeds ${options.maxBytes} bytes`);
      chunks.push(chunk.subarray(0, options.maxBytes - size));
      truncated = true;
      break;
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks), truncated };
}

/** A failed fetch in the outbound rules' words: the refusal met, else a timeout, else unreachable. */
function fetchRefusal(
  error: unknown,
  refused: OutboundRefused | undefined,
  timedOut: boolean,
  timeoutMs: number,
): OutboundRefused {
  if (error instanceof OutboundRefused) return error;
  if (refused) return refused;
  // A pooled request may fail on a connection another request opened: its refusal is the cause.
  if ((error as { cause?: unknown }).cause instanceof OutboundRefused)
    return (error as { cause: OutboundRefused }).cause;
  if (
    timedOut ||
    error instanceof undiciErrors.ConnectTimeoutError ||
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError
  ) {
    return new OutboundRefused('TIMEOUT', `no complete answer within ${timeoutMs} ms`);
  }
  return new OutboundRefused('UNREACHABLE', (error as Error).message);
}

/** Stops reading a body we will not use (destroying it reports an abort nobody needs to hear). */
function discard(body: NodeJS.ReadableStream & { destroy(): void }): void {
  body.on('error', () => undefined);
  body.destroy();
}

/** The host's addresses, every one checked; refused when any is not allowed (a mixed answer is suspect). */
async function checkedAddresses(
  hostname: string,
  resolve: OutboundLookup,
  loopbackOk: boolean,
): Promise<readonly string[]> {
  let addresses: readonly string[];
  if (isIP(hostname)) addresses = [hostname];
  else {
    try {
      addresses = await resolve(hostname);
    } catch (error) {
      throw new OutboundRefused('UNREACHABLE', `${hostname} does not resolve (${(error as Error).message})`);
    }
  }
  if (addresses.length === 0) throw new OutboundRefused('UNREACHABLE', `${hostname} has no address`);
  for (const address of addresses) {
    const refusal = isIP(address) ? addressRefusal(address, loopbackOk) : 'not an IP address';
    if (refusal)
      throw new OutboundRefused('ADDRESS_NOT_ALLOWED', `${hostname} resolves to ${address} (${refusal})`);
  }
  return addresses;
}
