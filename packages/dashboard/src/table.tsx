import type { ReactNode } from 'react';
import {
  flexRender,
  getCoreRowModel,
  useReactTable,
  type ColumnDef,
  type RowData,
} from '@tanstack/react-table';
import { Pager, type usePager } from './ui';

declare module '@tanstack/react-table' {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  interface ColumnMeta<TData extends RowData, TValue> {
    /** The class of this column's body cells. */
    className?: string;
    /** The data-testid of a body cell, given its row and the row's index. */
    testId?(row: TData, index: number): string | undefined;
  }
}

/**
 * A column: its header text, what a row shows in it (given the row and its index), its cells' class
 * and their data-testid.
 */
export function column<T>(
  header: string,
  cell: (row: T, index: number) => ReactNode,
  className?: string,
  testId?: (row: T, index: number) => string | undefined,
): ColumnDef<T> {
  return { id: header, header, cell: (c) => cell(c.row.original, c.row.index), meta: { className, testId } };
}

/**
 * A list as an accessible table: a caption, a header cell (scope="col") per column, a row per item;
 * then `empty` where there are no items, and the pager where the list has pages.
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
}: {
  caption: ReactNode;
  columns: ColumnDef<T>[];
  rows: T[];
  rowKey(row: T): string;
  /** Attributes of a row's <tr> (data-* hooks). */
  rowProps?(row: T): Record<string, string | undefined>;
  testId?: string;
  empty?: ReactNode;
  pager?: { pager: ReturnType<typeof usePager>; nextCursor: string | null | undefined };
}) {
  const table = useReactTable({
    data: rows,
    columns,
    getCoreRowModel: getCoreRowModel(),
    getRowId: (row) => rowKey(row),
  });
  return (
    <>
      <table data-testid={testId}>
        <caption>{caption}</caption>
        <thead>
          {table.getHeaderGroups().map((group) => (
            <tr key={group.id}>
              {group.headers.map((h) => (
                <th key={h.id} scope="col">
                  {flexRender(h.column.columnDef.header, h.getContext())}
                </th>
              ))}
            </tr>
          ))}
        </thead>
        <tbody>
          {table.getRowModel().rows.map((row) => (
            <tr key={row.id} {...rowProps?.(row.original)}>
              {row.getVisibleCells().map((c) => (
                <td
                  key={c.id}
                  className={c.column.columnDef.meta?.className}
                  data-testid={c.column.columnDef.meta?.testId?.(row.original, row.index)}
                >
                  {flexRender(c.column.columnDef.cell, c.getContext())}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 && empty ? <p>{empty}</p> : null}
      {pager ? <Pager {...pager} /> : null}
    </>
  );
}
