import { snapshotMac } from '../mandate/snapshot-mac';
import {
  INTERNAL_SERVICES,
  internalTokens,
  type CallerContext,
  type InternalService,
} from '../core/internal-token';

/** Test helpers for calling a service directly, as the gateway would. */
export const TEST_INTERNAL_SECRET = 'test-internal-secret-0123456789abcdef';
export const testTokens = internalTokens(TEST_INTERNAL_SECRET);
/** The snapshot MAC the services derive from TEST_INTERNAL_SECRET. */
export const testSnapshotMac = snapshotMac(TEST_INTERNAL_SECRET);

export function callerFor(tenantId: string | null, overrides: Partial<CallerContext> = {}): CallerContext {
  return {
    tenantId,
    actor: { type: 'api_key', key_id: 'key_01jtestkey0000000000000000' },
    permissions: ['mandates:read', 'mandates:write', 'verify', 'events:read', 'tenants:admin'],
    requestId: 'req_test',
    ...overrides,
  };
}

/** fetch() against a running service with a freshly minted internal token. */
export async function callService(
  baseUrl: string,
  method: string,
  path: string,
  options: {
    caller?: CallerContext | null;
    body?: unknown;
    headers?: Record<string, string>;
    /** The service the token is minted for; unset → one token every service accepts (the audience check has its own tests). */
    audience?: InternalService;
  } = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.caller !== null) {
    headers['x-internal-token'] = await testTokens.mint(
      options.caller ?? callerFor('tnt_test'),
      options.audience ?? INTERNAL_SERVICES,
    );
  }
  if (options.body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    body:
      options.body === undefined
        ? undefined
        : typeof options.body === 'string'
          ? options.body
          : JSON.stringify(options.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // keep text
  }
  return { status: res.status, body, headers: res.headers };
}
