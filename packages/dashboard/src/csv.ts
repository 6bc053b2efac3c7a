/**
 * A list as CSV (docs/DASHBOARD.md, "Design system"): every item the current filters select, as
 * the API returns it, one row each. Nested fields become dotted columns (`principal.id`), lists
 * are joined with "; ", and the columns are every field any item has, in the order first seen.
 */

/** At most this many rows in one file: past it, the file says so in its last line. */
export const CSV_MAX_ROWS = 10_000;

type Flat = Record<string, string>;

function flatten(value: unknown, prefix: string, out: Flat): void {
  if (value === null || value === undefined) return;
  if (Array.isArray(value)) {
    out[prefix] = value
      .map((v) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)))
      .join('; ');
    return;
  }
  if (typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
    return;
  }
  out[prefix] = String(value);
}

/**
 * One field (RFC 4180): quoted when it holds a comma, quote or line break. A field that a
 * spreadsheet would run as a formula (it starts with =, +, -, @, a tab or a carriage return: a
 * name an integrator chose) is prefixed with ' so it stays text.
 */
export function csvField(text: string): string {
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The items as CSV text, with a header line; `more` adds a last line saying the file stops there. */
export function toCsv(items: readonly unknown[], more = false): string {
  const rows = items.map((item) => {
    const flat: Flat = {};
    flatten(item, '', flat);
    return flat;
  });
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const row of rows)
    for (const key of Object.keys(row))
      if (!seen.has(key)) {
        seen.add(key);
        columns.push(key);
      }
  const lines = [columns.map(csvField).join(',')];
  for (const row of rows) lines.push(columns.map((c) => csvField(row[c] ?? '')).join(','));
  if (more) lines.push(csvField(`(first ${items.length} rows only: narrow the filters for the rest)`));
  return `${lines.join('\r\n')}\r\n`;
}
