import { MandateApiError, MandateClient, type Page, type Paged } from '@mandate/client';
import { CLIENT_HEADER } from '@mandate/shared/browser';
import type { Session } from './session';

export { MandateApiError };

const clients = new WeakMap<Session, MandateClient>();
// Each call is sent once: react-query decides what is asked again (main.tsx), and the wallet sign-in's poll handles its own 429.
const anonymous = new MandateClient({ retry: false });

/**
 * The API client of the signed-in caller (a JWT caller names its tenant in X-Tenant-Id), one per
 * session. Each call says it is the dashboard's, so its API_CALL records `via: "dashboard"` and the
 * audit log can leave the dashboard's own reads out (docs/API.md#audit-of-every-call).
 */
export function apiOf(session: Session | null): MandateClient {
  if (!session) return anonymous;
  let client = clients.get(session);
  if (!client) {
    client = new MandateClient({
      token: session.token,
      ...(session.kind === 'user' ? { tenantId: session.tenantId } : {}),
      headers: { [CLIENT_HEADER]: 'dashboard' },
      retry: false,
    });
    clients.set(session, client);
  }
  return client;
}

/**
 * Every item of a cursor-paged list, 100 a page, up to `maxPages` pages (then `truncated`): for
 * the overview pages that count or filter a whole collection.
 */
export async function allPages<T>(
  list: (query: { limit: number }) => Paged<T>,
  maxPages = 20,
): Promise<{ items: T[]; truncated: boolean }> {
  const items: T[] = [];
  let read = 0;
  for await (const page of list({ limit: 100 }).pages()) {
    items.push(...page.data);
    if (++read >= maxPages && page.has_more) return { items, truncated: true };
  }
  return { items, truncated: false };
}

/** `value` when it is one of `values` (a select's choice typed as the API's vocabulary), else undefined. */
export const oneOf = <const T extends string>(
  values: readonly T[],
  value: string | undefined,
): T | undefined => ((values as readonly string[]).includes(value ?? '') ? (value as T) : undefined);

export type { Page };
