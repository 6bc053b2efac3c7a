import { useId } from 'react';
import { DataTable, column } from './table';

/** One kind of value a bar is made of (stacked from the bottom, in this order). */
export interface ChartSeries {
  key: string;
  label: string;
  /** Paints its part of each bar and its legend swatch (styles.css `.series-*`). */
  className: string;
}

/** One bar: its axis label, a longer name for the table, and a value per series key. */
export interface ChartDatum {
  key: string;
  label: string;
  title?: string;
  values: Record<string, number>;
  /** Paints this bar instead of its series' class (one series only: e.g. a colour per mandate state). */
  className?: string;
}

const W = 640;
const LEFT = 44;
const RIGHT = 8;
const TOP = 18;
const BOTTOM = 22;
const MAX_X_LABELS = 12;

const n = (x: number) => x.toLocaleString('en');

/** The smallest 1, 2 or 5 × 10^k at least `max` (and at least 1): the top of the value axis. */
export function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

interface BarChartProps {
  /** The table's caption. */
  title: string;
  /** What the chart shows, in words (its accessible name). */
  summary: string;
  series: ChartSeries[];
  data: ChartDatum[];
  testId: string;
  height?: number;
  /** The table's first column header. */
  categoryLabel: string;
}

/** Where the chart's bars and ticks go: the value axis' top, the bars' band and width, a value's y. */
function layoutOf(series: ChartSeries[], data: ChartDatum[], height: number) {
  const total = (d: ChartDatum) => series.reduce((sum, s) => sum + (d.values[s.key] ?? 0), 0);
  const top = niceMax(Math.max(0, ...data.map(total)));
  const plotH = height - TOP - BOTTOM;
  const band = (W - LEFT - RIGHT) / Math.max(1, data.length);
  const barW = Math.max(2, Math.min(48, band * 0.7));
  // Every `every`-th bar is labelled, counted back from the last one (today, this hour), which always is.
  const every = Math.ceil(data.length / MAX_X_LABELS);
  const y = (v: number) => TOP + plotH - (v / top) * plotH;
  const ticks = Number.isInteger(top / 2) ? [0, top / 2, top] : [0, top];
  const showTotals = data.length <= 16;
  const multi = series.length > 1;
  return { total, top, plotH, band, barW, every, y, ticks, showTotals, multi, height, count: data.length };
}
type Layout = ReturnType<typeof layoutOf>;

/** One bar: its series' parts stacked from the axis, its total above, its label below when labelled. */
function Bar({ d, i, series, layout }: { d: ChartDatum; i: number; series: ChartSeries[]; layout: Layout }) {
  const { total, top, plotH, band, barW, every, showTotals, multi, height, count } = layout;
  const x = LEFT + i * band + (band - barW) / 2;
  // A pixel cursor from the axis up; a non-zero part stays visible however small.
  let cursor = TOP + plotH;
  return (
    <g>
      {series.map((s) => {
        const v = d.values[s.key] ?? 0;
        if (v <= 0) return null;
        const h = Math.max(2, (v / top) * plotH);
        cursor -= h;
        return (
          <rect
            key={s.key}
            className={d.className && !multi ? d.className : s.className}
            x={x}
            y={cursor}
            width={barW}
            height={h}
          >
            <title>{`${d.title ?? d.label}: ${multi ? `${s.label} ` : ''}${n(v)}`}</title>
          </rect>
        );
      })}
      {showTotals && total(d) > 0 ? (
        <text className="value" x={x + barW / 2} y={cursor - 4} textAnchor="middle">
          {n(total(d))}
        </text>
      ) : null}
      {(count - 1 - i) % every === 0 ? (
        <text className="tick" x={x + barW / 2} y={height - 6} textAnchor="middle">
          {d.label}
        </text>
      ) : null}
    </g>
  );
}

/** The chart's numbers as a table, its text alternative. */
function ChartNumbers({
  title,
  series,
  data,
  testId,
  categoryLabel,
  layout,
}: BarChartProps & { layout: Layout }) {
  const { multi, total } = layout;
  return (
    <DataTable
      caption={title}
      columns={[
        column<ChartDatum>(categoryLabel, (d) => d.title ?? d.label, { rowHeader: true }),
        ...series.map((s) =>
          column<ChartDatum>(s.label, (d) => d.values[s.key] ?? 0, {
            testId: (d) => (multi ? `${testId}-${d.key}-${s.key}` : `${testId}-${d.key}`),
          }),
        ),
        ...(multi ? [column<ChartDatum>('Total', total)] : []),
      ]}
      rows={data}
      rowKey={(d) => d.key}
      rowProps={(d) => ({ 'data-key': d.key })}
    />
  );
}

/**
 * Stacked vertical bars in hand-written SVG, with a text alternative: the SVG is one image named by
 * `summary`, and the numbers are a table under "Show the numbers" (each value cell carries
 * `data-testid` `<testId>-<datum key>`, and `-<series key>` when there is more than one series).
 */
export function BarChart(props: BarChartProps) {
  const { summary, series, data, testId, height = 180 } = props;
  const id = useId();
  const layout = layoutOf(series, data, height);
  const { y, ticks, multi } = layout;

  return (
    <figure className="chart" data-testid={testId}>
      {multi ? (
        <ul className="chart-legend" aria-hidden="true">
          {series.map((s) => (
            <li key={s.key}>
              <span className={`swatch ${s.className}`} /> {s.label}
            </li>
          ))}
        </ul>
      ) : null}
      <svg viewBox={`0 0 ${W} ${height}`} role="img" aria-labelledby={`${id}-summary`}>
        <title id={`${id}-summary`}>{summary}</title>
        {ticks.map((t) => (
          <g key={t}>
            <line className="grid" x1={LEFT} x2={W - RIGHT} y1={y(t)} y2={y(t)} />
            <text className="tick" x={LEFT - 6} y={y(t) + 4} textAnchor="end">
              {n(t)}
            </text>
          </g>
        ))}
        {data.map((d, i) => (
          <Bar key={d.key} d={d} i={i} series={series} layout={layout} />
        ))}
      </svg>
      <details>
        <summary>Show the numbers</summary>
        <ChartNumbers {...props} layout={layout} />
      </details>
    </figure>
  );
}
