import { useLayoutEffect, useRef, type ReactNode } from 'react';
import {
  flexRender,
  getCoreRowModel,
  useReactTable,
  type Cell,
  type ColumnDef,
  type Row,
  type RowData,
  type Table as ReactTable,
} from '@tanstack/react-table';
import { Table } from '@mantine/core';
import { ArrowDown, ArrowUp } from 'lucide-react';
import { Empty, Pager, type usePager } from './ui';

export type { ColumnDef };

declare module '@tanstack/react-table' {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars, @typescript-eslint/no-empty-object-type
  interface ColumnMeta<TData extends RowData, TValue> extends CellOptions<TData> {}
}

/** How a column's body cells are marked up. */
export interface CellOptions<T> {
  /** Their class, or a row's. */
  className?: string | ((row: T) => string | undefined);
  /** A cell's data-testid, given its row and the row's index. */
  testId?(row: T, index: number): string | undefined;
  /** The cells head their rows: <th scope="row">. */
  rowHeader?: boolean;
  /** The list is ordered by this column: its header changes the order (DataTableProps' `sort`). */
  sortable?: boolean;
}

/**
 * A column: its header, what a row shows in it (given the row and its index), and how its cells are
 * marked up (a class name alone, or CellOptions).
 */
export function column<T>(
  header: string,
  cell: (row: T, index: number) => ReactNode,
  options: string | CellOptions<T> = {},
): ColumnDef<T> {
  return {
    id: header,
    header,
    cell: (c) => cell(c.row.original, c.row.index),
    meta: typeof options === 'string' ? { className: options } : options,
  };
}

/** What a DataTable shows. */
export interface DataTableProps<T> {
  /** Its caption (a table in a titled section may go without). */
  caption?: ReactNode;
  columns: ColumnDef<T>[];
  rows: T[];
  rowKey(row: T): string;
  /** Attributes of a row's <tr> (data-* hooks). */
  rowProps?(row: T): Record<string, string | undefined>;
  testId?: string;
  empty?: ReactNode;
  pager?: { pager: ReturnType<typeof usePager>; nextCursor: string | null | undefined };
  /** The rows' order (the list's, from the API: never a sort of this page alone) and how to change it. */
  sort?: { order: 'asc' | 'desc'; onChange(order: 'asc' | 'desc'): void };
}

type Sort = DataTableProps<unknown>['sort'];

/** The header row(s): a column header cell each, a sortable one's as a SortButton with its aria-sort. */
function headRows<T>(table: ReactTable<T>, sort: Sort) {
  return table.getHeaderGroups().map((group) => (
    <Table.Tr key={group.id}>
      {group.headers.map((h) => {
        const header = flexRender(h.column.columnDef.header, h.getContext());
        const sorted = sort && h.column.columnDef.meta?.sortable ? sort : undefined;
        return (
          <Table.Th
            key={h.id}
            scope="col"
            className="nowrap"
            aria-sort={sorted ? (sorted.order === 'asc' ? 'ascending' : 'descending') : undefined}
          >
            {sorted ? <SortButton sort={sorted}>{header}</SortButton> : header}
          </Table.Th>
        );
      })}
    </Table.Tr>
  ));
}

/** One body cell, marked up as its column's CellOptions say (a row header is a <th scope="row">). */
function bodyCell<T>(c: Cell<T, unknown>, row: Row<T>) {
  const meta = c.column.columnDef.meta ?? {};
  const props = {
    className: typeof meta.className === 'function' ? meta.className(row.original) : meta.className,
    'data-testid': meta.testId?.(row.original, row.index),
    'data-label': typeof c.column.columnDef.header === 'string' ? c.column.columnDef.header : undefined,
  };
  // Called, not rendered as a component (flexRender would): the cell function is new on every
  // render, so as a component type it would remount the cell, and a focused button in it
  // (a dialog's opener) would be lost.
  const cell = c.column.columnDef.cell;
  const content = typeof cell === 'function' ? cell(c.getContext()) : flexRender(cell, c.getContext());
  return meta.rowHeader ? (
    <Table.Th key={c.id} scope="row" {...props}>
      {content}
    </Table.Th>
  ) : (
    <Table.Td key={c.id} {...props}>
      {content}
    </Table.Td>
  );
}

/**
 * A list as an accessible table (Mantine's): a caption, a header cell (scope="col") per column, a
 * row per item; `empty` instead where there are no items, and the pager only where there is
 * another page. Each cell carries its column's name (data-label): where the table is wider than
 * its place (a tablet, a narrow window, a phone), each row shows as a card of labelled lines
 * instead of hiding its last columns behind a scroll bar.
 */
export function DataTable<T>({
  caption,
  columns,
  rows,
  rowKey,
  rowProps,
  testId,
  empty,
  pager,
  sort,
}: DataTableProps<T>) {
  const table = useReactTable({
    data: rows,
    columns,
    getCoreRowModel: getCoreRowModel(),
    getRowId: (row) => rowKey(row),
  });
  const wrap = useCardsWhenTooWide(rows);
  if (rows.length === 0 && empty) {
    return (
      <>
        {typeof empty === 'string' ? <Empty title={empty} /> : empty}
        {pager ? <Pager {...pager} /> : null}
      </>
    );
  }
  const sortedBy = sort ? columns.find((c) => c.meta?.sortable)?.header : undefined;
  return (
    <div className="table-wrap" ref={wrap}>
      {sort && typeof sortedBy === 'string' ? (
        // As cards the header row is out of sight, and its button with it: the order's own control.
        <div className="cards-sort">
          <SortButton sort={sort}>
            {sortedBy}: {sort.order === 'asc' ? 'oldest first' : 'newest first'}
          </SortButton>
        </div>
      ) : null}
      <Table data-testid={testId} striped highlightOnHover verticalSpacing={6} captionSide="top">
        {caption ? <Table.Caption>{caption}</Table.Caption> : null}
        <Table.Thead>{headRows(table, sort)}</Table.Thead>
        <Table.Tbody>
          {table.getRowModel().rows.map((row) => (
            <Table.Tr key={row.id} {...rowProps?.(row.original)}>
              {row.getVisibleCells().map((c) => bodyCell(c, row))}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {pager ? <Pager {...pager} /> : null}
    </div>
  );
}

/**
 * A sortable column's header: a button (reached by Tab, pressed with Enter or Space) that turns the
 * order around; the header cell's aria-sort says the order, the arrow shows it.
 */
function SortButton({
  sort,
  children,
}: {
  sort: NonNullable<DataTableProps<unknown>['sort']>;
  children: ReactNode;
}) {
  const next = sort.order === 'asc' ? 'desc' : 'asc';
  const Arrow = sort.order === 'asc' ? ArrowUp : ArrowDown;
  return (
    <button
      type="button"
      className="sort-button"
      title={next === 'asc' ? 'Show oldest first' : 'Show newest first'}
      onClick={() => sort.onChange(next)}
    >
      {children}
      <Arrow size={14} aria-hidden />
    </button>
  );
}

/**
 * Lays the table in its wrapper out as cards (data-layout="cards", styles.css) whenever it would be
 * wider than the wrapper as a table, measured before the browser paints: when the rows change and
 * whenever the wrapper's width does. The width a table needs depends on its rows (ids, names), so
 * no fixed breakpoint fits every table: one that fits stays a table, at any width.
 */
function useCardsWhenTooWide(rows: unknown[]) {
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    const wrap = ref.current;
    if (!wrap) return;
    const choose = () => {
      // Measured as a table, then set: both before the next paint, so the table never flashes.
      wrap.dataset.layout = 'table';
      wrap.dataset.layout = wrap.scrollWidth > wrap.clientWidth + 1 ? 'cards' : 'table';
    };
    choose();
    let width = wrap.clientWidth;
    const observer = new ResizeObserver(() => {
      // A change of layout changes the height only; a new width is what asks again.
      if (wrap.clientWidth === width) return;
      width = wrap.clientWidth;
      choose();
    });
    observer.observe(wrap);
    return () => observer.disconnect();
  }, [rows]);
  return ref;
}
