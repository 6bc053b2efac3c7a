import { createContext, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { Me } from '@mandate/client';
import { MandateApiError, apiOf } from './api';
import type { Area } from './areas';
import { loadSession, saveSession, type Session } from './session';

interface Auth {
  session: Session | null;
  /** The signed-in caller's permissions: the operator's platform:*, or the subject's from /v1/me. */
  permissions: string[] | undefined;
  me: Me | undefined;
  /** Whether the caller may read the audit log (events:read), which some pages add to what they show. */
  canReadEvents: boolean;
  meError: unknown;
  signIn(session: Session): void;
  signOut(): void;
}

const AuthContext = createContext<Auth | null>(null);

export function AuthProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<Session | null>(loadSession);
  const queryClient = useQueryClient();
  const me = useQuery({
    queryKey: ['me', session?.token],
    queryFn: () => apiOf(session).getMe(),
    enabled: session?.kind === 'user',
    retry: false,
    staleTime: 60_000,
  });
  // An expired or withdrawn sign-in (401, or 404: no role in the tenant any more) goes back to the sign-in page.
  useEffect(() => {
    if (me.error instanceof MandateApiError && (me.error.status === 401 || me.error.status === 404)) {
      queryClient.clear();
      saveSession(null);
      setSession(null);
    }
  }, [me.error, queryClient]);
  const value = useMemo<Auth>(() => {
    const permissions = session?.kind === 'operator' ? ['platform:*'] : me.data?.permissions;
    return {
      session,
      me: me.data,
      meError: me.error,
      permissions,
      canReadEvents: !!permissions?.includes('events:read'),
      signIn(next) {
        queryClient.clear();
        saveSession(next);
        setSession(next);
      },
      signOut() {
        queryClient.clear();
        saveSession(null);
        setSession(null);
      },
    };
  }, [session, me.data, me.error, queryClient]);
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

export function useAuth(): Auth {
  const auth = useContext(AuthContext);
  if (!auth) throw new Error('useAuth outside AuthProvider');
  return auth;
}

/**
 * The signed-in caller as one area of the dashboard sees them: the tenant signed in to ('' for the
 * operator) and whether the area's write permission lets them change what it shows.
 */
export function useAreaAuth(area: Area) {
  const auth = useAuth();
  const tenantId = auth.session?.kind === 'user' ? auth.session.tenantId : '';
  const canWrite = !!area.write && !!auth.permissions?.includes(area.write);
  return { ...auth, tenantId, canWrite };
}
