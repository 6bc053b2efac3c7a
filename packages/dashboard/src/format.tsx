import type { ReactNode } from 'react';
import { ActionIcon, Badge, CopyButton } from '@mantine/core';
import { Check, Copy } from 'lucide-react';
import { Link } from 'react-router';

/** An instant as the dashboard writes it everywhere: UTC, to the second ("2025-06-01 14:03:07 UTC"). */
export const formatTime = (iso: string | null | undefined) =>
  iso ? new Date(iso).toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : '—';

const RELATIVE = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
];

/** "3 minutes ago", "in 2 days": how far an instant is from `now`, in its largest whole unit. */
export function relativeTime(iso: string, now = Date.now()): string {
  const diff = Date.parse(iso) - now;
  for (const [unit, ms] of UNITS)
    if (Math.abs(diff) >= ms || unit === 'second') return RELATIVE.format(Math.round(diff / ms), unit);
  return '';
}

/** An instant in UTC with its relative hint; `hint={false}` where a row is tight. */
export function Time({
  iso,
  hint = true,
  zone = true,
}: {
  iso: string | null | undefined;
  hint?: boolean;
  /** Write " UTC" after it (a column headed "(UTC)" goes without). */
  zone?: boolean;
}) {
  if (!iso) return <>—</>;
  const text = formatTime(iso);
  return (
    <span className="nowrap">
      <time dateTime={iso} title={hint ? undefined : relativeTime(iso)}>
        {zone ? text : text.replace(/ UTC$/, '')}
      </time>
      {hint ? <span className="time-hint"> · {relativeTime(iso)}</span> : null}
    </span>
  );
}

/** Digits after the decimal point of a currency (EUR 2, JPY 0, KWD 3), as Intl knows them. */
function currencyFormat(currency: string): Intl.NumberFormat | null {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency });
  } catch {
    return null;
  }
}

/** An amount in minor units (the API's) in major units with its currency: 50000 EUR → "€500.00". */
export function formatMoney(minor: number, currency: string | undefined): string {
  const format = currency ? currencyFormat(currency) : null;
  if (!format) return `${minor.toLocaleString('en')} (minor units${currency ? ` of ${currency}` : ''})`;
  const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
  return format.format(minor / 10 ** digits);
}

/** A currency's minor units in one major unit (EUR 100, JPY 1): for an amount typed in major units. */
export function minorPerMajor(currency: string): number | null {
  const format = currencyFormat(currency);
  return format ? 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2) : null;
}

/** A mandate's constraints in words: "up to €500.00", "no limits". */
export function constraintsText(c: { max_amount?: number; currency?: string } | undefined): string {
  if (!c || (c.max_amount === undefined && !c.currency)) return 'No amount limit';
  if (c.max_amount === undefined) return `Any amount, in ${c.currency}`;
  return `Up to ${formatMoney(c.max_amount, c.currency)} per call`;
}

/** A scope's budget in words: "€2,000.00 a month (Europe/Berlin)", "No budget". */
export function budgetText(scope: {
  budget?: { amount: number; period: string; timezone: string };
  constraints?: { currency?: string };
}): string {
  const b = scope.budget;
  if (!b) return 'No budget';
  const money = formatMoney(b.amount, scope.constraints?.currency);
  if (b.period === 'total') return `${money} in total`;
  return `${money} a ${b.period} (${b.timezone})`;
}

/** The short form of an id: its last 8 characters (the random part, unique enough to tell ids apart). */
export const shortId = (id: string) => id.slice(-8);
const prefixOf = (id: string) => /^[a-z]{2,4}_/.exec(id)?.[0] ?? '';

/**
 * The copy button beside a value: an icon that turns into a check once copied. Its accessible
 * name says what it copies (`what`, the value itself by default).
 */
export function CopyIcon({ value, what = value }: { value: string; what?: string }) {
  return (
    <CopyButton value={value} timeout={1500}>
      {({ copied, copy }) => (
        <ActionIcon
          variant="subtle"
          color={copied ? 'green' : 'gray'}
          size="sm"
          onClick={copy}
          aria-label={copied ? `Copied ${what}` : `Copy ${what}`}
        >
          {copied ? <Check size={14} aria-hidden /> : <Copy size={14} aria-hidden />}
        </ActionIcon>
      )}
    </CopyButton>
  );
}

/**
 * An id shortened (its prefix, "…", its short id), never broken inside, with a copy button; the
 * whole id is its title and (as a link) its accessible name.
 */
export function IdToken({ id, to, full = false }: { id: string; to?: string; full?: boolean }) {
  const text = full || id.length <= 16 ? id : `${prefixOf(id)}…${shortId(id)}`;
  return (
    <span className="id-token">
      {to ? (
        <Link to={to} title={id}>
          <code>{text}</code>
        </Link>
      ) : (
        <code title={id}>{text}</code>
      )}
      <CopyIcon value={id} />
    </span>
  );
}

/**
 * A long value (an id, a URL) in a dense table: cut with an ellipsis (at most 14rem), its whole value the title (shown on hover) and copied by its copy button, so a 91-character
 * id never widens a table into cards (docs/DASHBOARD.md, "Design system").
 */
export function Cut({ value, copy = true }: { value: string; copy?: boolean }) {
  return (
    <span className="cut-wrap">
      <code className="cut" title={value}>
        {value}
      </code>
      {copy ? <CopyIcon value={value} /> : null}
    </span>
  );
}

const GREEN = ['CAPTURED', 'ACTIVE', 'VERIFIED', 'SUCCEEDED', 'ALLOW', 'APPROVED', 'ENABLED', 'OK'];
const AMBER = ['HELD', 'SUSPENDED', 'STAGING', 'PENDING', 'RETRYING', 'SCHEDULED'];
const RED = ['FAILED', 'DENY', 'REJECTED', 'DEAD'];

/** A state as a badge: active green, paused amber, ended grey, failed red. */
export function StateBadge({
  state,
  testId,
  children,
}: {
  state: string;
  testId?: string;
  children?: ReactNode;
}) {
  const s = state.toUpperCase();
  const color = GREEN.includes(s) ? 'green' : AMBER.includes(s) ? 'yellow' : RED.includes(s) ? 'red' : 'gray';
  return (
    <Badge color={color} variant="light" radius="sm" data-testid={testId} className="nowrap">
      {children ?? state}
    </Badge>
  );
}
