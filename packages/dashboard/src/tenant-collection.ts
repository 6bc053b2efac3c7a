import { useQuery, useQueryClient } from '@tanstack/react-query';
import { call, qs, type Page } from './api';
import type { Area } from './areas';
import { useAuth } from './auth';
import { usePager } from './ui';

/**
 * A page of one of the signed-in tenant's collections (`/v1/tenants/{id}/<collection>`), the
 * refresh after a change, and whether the area lets the user change it.
 */
export function useTenantCollection<T>(collection: string, area: Area) {
  const { session, permissions } = useAuth();
  const tenantId = session?.kind === 'user' ? session.tenantId : '';
  const canWrite = !!area.write && !!permissions?.includes(area.write);
  const base = `/v1/tenants/${tenantId}/${collection}`;
  const pager = usePager();
  const queryClient = useQueryClient();
  const list = useQuery({
    queryKey: [collection, tenantId, pager.cursor],
    queryFn: () => call<Page<T>>(session, 'GET', base + qs({ cursor: pager.cursor, limit: '20' })),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: [collection] });
  return { session, tenantId, canWrite, base, pager, list, refresh };
}
