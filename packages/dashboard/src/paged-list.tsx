import { useQuery } from '@tanstack/react-query';
import type { MandateClient, Paged } from '@mandate/client';
import { apiOf } from './api';
import { useAuth } from './auth';
import { DataTable, type DataTableProps } from './table';
import { Loaded, useFields, usePager } from './ui';

/** What a list's `read` is given: the filters' values (trimmed, empty ones too), the cursor and the page size. */
export type PageQuery<F extends string> = Partial<Record<F, string>> & { cursor?: string; limit: number };

/**
 * One page of a cursor-paged list (`read`: the client's list operation, `limit` items a page), the pager through it and its
 * filters (`filters` holds their first values, `field(name)` shows and changes one). A filter's text
 * is sent trimmed (an id pasted with spaces still matches), through `toParams` where a value needs
 * translating; a change to a filter goes back to the first page. The query key begins with `key`: what a change to the list invalidates.
 */
export function usePagedList<T, F extends string = never>({
  key,
  read,
  filters = {} as Record<F, string>,
  toParams = (values) => values,
  limit = 20,
}: {
  key: readonly unknown[];
  read(api: MandateClient, query: PageQuery<F>): Paged<T>;
  filters?: Record<F, string>;
  toParams?(values: Record<F, string>): Partial<Record<F, string>>;
  limit?: number;
}) {
  const { session } = useAuth();
  const pager = usePager();
  const { values, field } = useFields(filters, pager.reset);
  const params = toParams(trimmed(values));
  const query = useQuery({
    queryKey: [...key, params, pager.cursor],
    queryFn: () =>
      read(apiOf(session), { ...params, ...(pager.cursor ? { cursor: pager.cursor } : {}), limit }).page(),
  });
  return { query, pager, values, field };
}

export type PagedList<T> = ReturnType<typeof usePagedList<T>>;

const trimmed = <F extends string>(values: Record<F, string>) =>
  Object.fromEntries(Object.entries<string>(values).map(([k, v]) => [k, v.trim()])) as Record<F, string>;

/** A paged list's current page as a DataTable with the pager (after "Loading…", or its error). */
export function PagedTable<T>({
  list,
  ...table
}: { list: Pick<PagedList<T>, 'query' | 'pager'> } & Omit<DataTableProps<T>, 'rows' | 'pager'>) {
  return (
    <Loaded query={list.query}>
      {(page) => (
        <DataTable {...table} rows={page.data} pager={{ pager: list.pager, nextCursor: page.next_cursor }} />
      )}
    </Loaded>
  );
}
