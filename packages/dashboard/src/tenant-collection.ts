import { useQueryClient } from '@tanstack/react-query';
import type { MandateClient, Paged } from '@mandate/client';
import type { Area } from './areas';
import { useAreaAuth } from './auth';
import { usePagedList, type PageQuery } from './paged-list';

/**
 * A page of one of the signed-in tenant's collections (named `collection` in the query cache, read by
 * `read`: `/v1/tenants/{id}/…`, or a route that takes the tenant from the sign-in), the refresh after
 * a change, and whether the area lets the user change it.
 */
export function useTenantCollection<T>(
  collection: string,
  area: Area,
  read: (api: MandateClient, tenantId: string, query: PageQuery<never>) => Paged<T>,
) {
  const { session, tenantId, canWrite } = useAreaAuth(area);
  const list = usePagedList<T>({
    key: [collection, tenantId],
    read: (api, query) => read(api, tenantId, query),
  });
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: [collection] });
  return { session, tenantId, canWrite, list, refresh };
}
