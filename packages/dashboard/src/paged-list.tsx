import { useQuery } from '@tanstack/react-query';
import { call, qs, type Page } from './api';
import { useAuth } from './auth';
import { DataTable, type DataTableProps } from './table';
import { Loaded, useFields, usePager } from './ui';

/**
 * One page of a cursor-paged list (GET `path`, `limit` items a page), the pager through it and its
 * filters (`filters` holds their first values, `field(name)` shows and changes one). A filter's text
 * is sent trimmed (an id pasted with spaces still matches), through `toParams` where a value needs
 * translating; a change to a filter goes back to the first page. The query key begins with `key`: what a change to the list invalidates.
 */
export function usePagedList<T, F extends string = never>({
  key,
  path,
  filters = {} as Record<F, string>,
  toParams = (values) => values,
  limit = 20,
}: {
  key: readonly unknown[];
  path: string;
  filters?: Record<F, string>;
  toParams?(values: Record<F, string>): Record<string, string>;
  limit?: number;
}) {
  const { session } = useAuth();
  const pager = usePager();
  const { values, field } = useFields(filters, pager.reset);
  const params = toParams(trimmed(values));
  const query = useQuery({
    queryKey: [...key, params, pager.cursor],
    queryFn: () =>
      call<Page<T>>(session, 'GET', path + qs({ ...params, cursor: pager.cursor, limit: String(limit) })),
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
