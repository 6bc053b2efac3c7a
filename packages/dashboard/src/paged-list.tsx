import { useEffect, useRef, useState } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import { Button, Group, Text } from '@mantine/core';
import { Download } from 'lucide-react';
import { useSearchParams } from 'react-router';
import type { MandateClient, Paged } from '@mandate/client';
import { apiOf } from './api';
import { useAuth } from './auth';
import { DataTable, type DataTableProps } from './table';
import { CSV_MAX_ROWS, toCsv } from './csv';
import { ErrorMessage, fieldsOf, Loaded, usePager } from './ui';

/** Which way a list runs: newest first (the API's default) or oldest first. */
export type ListOrder = 'asc' | 'desc';

/**
 * What a list's `read` is given: the filters' values (trimmed, empty ones too), the cursor and the
 * page size; for an `ordered` list also its order, and include_total on the pages it shows.
 */
export type PageQuery<F extends string> = Partial<Record<F, string>> & {
  cursor?: string;
  limit: number;
  order?: ListOrder;
  include_total?: 'true';
};

/**
 * One page of a cursor-paged list (`read`: the client's list operation, `limit` items a page), the pager through it and its
 * filters (`filters` holds their first values, `field(name)` shows and changes one). A filter's text
 * is sent trimmed (an id pasted with spaces still matches), through `toParams` where a value needs
 * translating; a change to a filter goes back to the first page. The query key begins with `key`: what a change to the list invalidates.
 * An `ordered` list (a route that takes `order` and `include_total`, docs/API.md, "Lists and paging")
 * also keeps its order in the URL (`?order=asc`; newest first is left out), asks for the total with
 * each page it shows, and exports in its order; a change of order goes back to the first page.
 */
export function usePagedList<T, F extends string = never>({
  key,
  read,
  filters = {} as Record<F, string>,
  toParams = (values) => values,
  limit = 20,
  ordered = false,
}: {
  key: readonly unknown[];
  read(api: MandateClient, query: PageQuery<F>): Paged<T>;
  filters?: Record<F, string>;
  toParams?(values: Record<F, string>): Partial<Record<F, string>>;
  limit?: number;
  ordered?: boolean;
}) {
  const { session } = useAuth();
  const pager = usePager();
  const { values, field: urlField } = useUrlFields<F | typeof ORDER>(
    ordered ? { ...filters, [ORDER]: 'desc' } : (filters as Record<F | typeof ORDER, string>),
    pager.reset,
  );
  const { [ORDER]: orderInUrl, ...filterValues } = values;
  // Anything but asc in the URL (a hand-edited link) reads as the default.
  const order: ListOrder = ordered && orderInUrl === 'asc' ? 'asc' : 'desc';
  const params = toParams(trimmed(filterValues as Record<F, string>));
  const ordering = ordered ? { order } : {};
  const query = useQuery({
    queryKey: [...key, params, order, pager.cursor],
    queryFn: () =>
      read(apiOf(session), {
        ...params,
        ...ordering,
        ...(ordered ? { include_total: 'true' as const } : {}),
        ...(pager.cursor ? { cursor: pager.cursor } : {}),
        limit,
      }).page(),
  });
  const field = urlField as (name: F) => ReturnType<typeof urlField>;
  const setOrder = (next: ListOrder) => urlField(ORDER).onChange(next);
  const everything = () =>
    readEverything((page) => read(apiOf(session), { ...params, ...ordering, ...page }));
  return {
    query,
    pager,
    values: filterValues as Record<F, string>,
    field,
    everything,
    limit,
    order,
    setOrder,
  };
}

/**
 * Every item the filters select, page by page (100 each, the API's most), up to CSV_MAX_ROWS; in
 * the list's order, without the total (one count would be read per page of the export).
 */
async function readEverything<T>(
  read: (page: { cursor?: string; limit: number }) => Paged<T>,
): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await read({ ...(cursor ? { cursor } : {}), limit: 100 }).page();
    items.push(...page.data);
    if (!page.next_cursor) return { items, more: false };
    if (items.length >= CSV_MAX_ROWS) return { items: items.slice(0, CSV_MAX_ROWS), more: true };
    cursor = page.next_cursor;
  }
}

/** The URL parameter of an ordered list's order. */
const ORDER = 'order';

/**
 * A list's filters kept in the page's URL (`?state=ACTIVE&delegate_id=agent_4`), so a reload, Back
 * from an item, or a shared link shows the same filtered list; a filter at its first value is left
 * out. Each change replaces the history entry (typing does not fill Back with keystrokes).
 */
function useUrlFields<F extends string>(initial: Record<F, string>, onChange: () => void) {
  const [params, setParams] = useSearchParams();
  const fromUrl = (search: URLSearchParams) =>
    Object.fromEntries(
      Object.entries<string>(initial).map(([name, first]) => [name, search.get(name) ?? first]),
    ) as Record<F, string>;
  // Read from the URL when the list opens; typed into local state (a controlled field must not
  // wait for a navigation), and each change written back to the URL.
  const [values, setValues] = useState(() => fromUrl(params));
  // The fields as last typed, ahead of the render: two changes in one tick (a field, then a
  // select) would otherwise write the URL from the same stale parameters, and the second would
  // drop the first (react-router hands setParams' callback the rendered parameters, not a queue).
  const latest = useRef(values);
  // This list's filters as the URL holds them, and those it wrote itself: any other change (a link
  // or the header's search to this same page) sets the fields from the URL, so they never show
  // filters the URL no longer has.
  const inUrl = JSON.stringify(fromUrl(params));
  const seen = useRef(inUrl);
  const written = useRef(new Set<string>());
  useEffect(() => {
    if (inUrl === seen.current) return;
    seen.current = inUrl;
    if (written.current.delete(inUrl)) return;
    latest.current = JSON.parse(inUrl) as Record<F, string>;
    setValues(latest.current);
    onChange();
  }, [inUrl]);
  const field = fieldsOf(values, (name, value) => {
    latest.current = { ...latest.current, [name]: value };
    setValues((v) => ({ ...v, [name]: value }));
    setParams(
      (now) => {
        const next = new URLSearchParams(now);
        for (const [field, typed] of Object.entries<string>(latest.current)) {
          if (typed === initial[field as F]) next.delete(field);
          else next.set(field, typed);
        }
        written.current.add(JSON.stringify(fromUrl(next)));
        return next;
      },
      { replace: true },
    );
    onChange();
  });
  return { values, field };
}

export type PagedList<T> = ReturnType<typeof usePagedList<T>>;

const trimmed = <F extends string>(values: Record<F, string>) =>
  Object.fromEntries(Object.entries<string>(values).map(([k, v]) => [k, v.trim()])) as Record<F, string>;

/**
 * A paged list's current page as a DataTable with the pager (after "Loading…", or its error);
 * with `csv` (the file's name, without .csv) and a list that can read everything, an **Export CSV**
 * of every item its filters select. An ordered list shows which items of how many the page holds
 * ("1–20 of 1,234"), and its sortable column's header changes the order.
 */
export function PagedTable<T>({
  list,
  csv,
  ...table
}: {
  list: Pick<PagedList<T>, 'query' | 'pager'> &
    Partial<Pick<PagedList<T>, 'everything' | 'limit' | 'order' | 'setOrder'>>;
  csv?: string;
} & Omit<DataTableProps<T>, 'rows' | 'pager' | 'sort'>) {
  const { order, setOrder } = list;
  return (
    <>
      {csv && list.everything ? <CsvExport name={csv} everything={list.everything} /> : null}
      <Loaded query={list.query}>
        {(page) => (
          <>
            {page.total !== undefined && page.data.length > 0 && list.limit !== undefined ? (
              <PageRange
                page={list.pager.page}
                limit={list.limit}
                shown={page.data.length}
                total={page.total}
              />
            ) : null}
            <DataTable
              {...table}
              rows={page.data}
              sort={order && setOrder ? { order, onChange: setOrder } : undefined}
              pager={{ pager: list.pager, nextCursor: page.next_cursor }}
            />
          </>
        )}
      </Loaded>
    </>
  );
}

/** Which items of how many this page shows: "1–20 of 1,234" (the pages before it held `limit` each). */
function PageRange({
  page,
  limit,
  shown,
  total,
}: {
  page: number;
  limit: number;
  shown: number;
  total: number;
}) {
  const first = (page - 1) * limit + 1;
  const n = (value: number) => value.toLocaleString('en');
  return (
    <Text size="sm" c="dimmed" className="page-range" data-testid="page-range">
      {n(first)}–{n(first + shown - 1)} of {n(total)}
    </Text>
  );
}

/** The export button, and how many rows the last export held. */
function CsvExport<T>({
  name,
  everything,
}: {
  name: string;
  everything(): Promise<{ items: T[]; more: boolean }>;
}) {
  const exporting = useMutation({
    mutationFn: async () => {
      const { items, more } = await everything();
      download(`${name}.csv`, toCsv(items, more));
      return { count: items.length, more };
    },
  });
  return (
    <Group gap="sm" mb="xs" className="csv-export">
      <Button
        variant="default"
        size="xs"
        leftSection={<Download size={14} aria-hidden />}
        loading={exporting.isPending}
        onClick={() => exporting.mutate()}
      >
        Export CSV
      </Button>
      {exporting.data ? (
        <Text size="sm" role="status" data-testid="csv-exported">
          {exporting.data.count.toLocaleString('en')} {exporting.data.count === 1 ? 'row' : 'rows'} exported
          {exporting.data.more ? ' (the first ones only: narrow the filters for the rest)' : ''}
        </Text>
      ) : null}
      <ErrorMessage error={exporting.error} />
    </Group>
  );
}

/** Saves `text` as a file named `name` through the browser's download. */
export function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1_000);
}
