import type { Session } from './session';

/** An answer of the API that is not a 2xx: its status and the error envelope's message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** One call to the gateway, as the signed-in caller (a JWT caller names its tenant in X-Tenant-Id). */
export async function call<T>(
  session: Session | null,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (session) headers.Authorization = `Bearer ${session.token}`;
  if (session?.kind === 'user') headers['X-Tenant-Id'] = session.tenantId;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: reported below by status
  }
  if (!res.ok) {
    const envelope = (json ?? {}) as { error?: string; message?: string };
    throw new ApiError(res.status, envelope.error ?? 'ERROR', envelope.message ?? `HTTP ${res.status}`);
  }
  return json as T;
}

export const qs = (params: Record<string, string | undefined | null>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) p.set(k, v);
  const s = p.toString();
  return s ? `?${s}` : '';
};

/**
 * Every item of a cursor-paged list, 100 a page, up to `maxPages` pages (then `truncated`): for
 * the overview pages that count or filter a whole collection.
 */
export async function allPages<T>(
  session: Session | null,
  path: string,
  params: Record<string, string | undefined> = {},
  maxPages = 20,
): Promise<{ items: T[]; truncated: boolean }> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const page = await call<Page<T>>(session, 'GET', path + qs({ ...params, cursor, limit: '100' }));
    items.push(...page.data);
    if (!page.has_more || !page.next_cursor) return { items, truncated: false };
    cursor = page.next_cursor;
  }
  return { items, truncated: true };
}
