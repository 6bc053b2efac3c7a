/**
 * Who is signed in. The token lives in sessionStorage (this tab only, gone when it closes) and in
 * memory; never in a URL.
 */
export type Session =
  | { kind: 'user'; token: string; tenantId: string; subjectId: string; method: SignInMethod }
  | { kind: 'operator'; token: string };

/** How a tenant member signed in: docs/DASHBOARD.md. */
export type SignInMethod = 'development' | 'oidc' | 'wallet';

const KEY = 'mandate-dashboard-session';

export function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

export function saveSession(session: Session | null): void {
  if (session) sessionStorage.setItem(KEY, JSON.stringify(session));
  else sessionStorage.removeItem(KEY);
}
