import { useQueryClient } from '@tanstack/react-query';
import type { Area } from './areas';
import { useAuth } from './auth';
import { usePagedList } from './paged-list';

/**
 * A page of one of the signed-in tenant's collections (`/v1/tenants/{id}/<collection>`), the
 * refresh after a change, and whether the area lets the user change it.
 */
export function useTenantCollection<T>(collection: string, area: Area) {
  const { session, permissions } = useAuth();
  const tenantId = session?.kind === 'user' ? session.tenantId : '';
  const canWrite = !!area.write && !!permissions?.includes(area.write);
  const base = `/v1/tenants/${tenantId}/${collection}`;
  const list = usePagedList<T>({ key: [collection, tenantId], path: base });
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: [collection] });
  return { session, tenantId, canWrite, base, list, refresh };
}
