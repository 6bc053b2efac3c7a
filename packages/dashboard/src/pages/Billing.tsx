import { useQuery } from '@tanstack/react-query';
import type { ApiKey, Usage } from '@mandate/client';
import { allPages, apiOf } from '../api';
import { useAuth } from '../auth';
import { BarChart } from '../chart';
import { Empty, ErrorMessage, formatTime, Loading, PageHeader, Fact } from '../ui';
import { DataTable, column } from '../table';

type Bucket = Usage['limits']['global'];

const ENDPOINT_LABELS: Record<string, string> = {
  'mandates.create': 'POST /v1/mandates',
  'mandates.lifecycle': 'mandate suspend / reactivate / revoke (each)',
  'apikeys.create': 'API key create and rotate',
  'evidence.export': 'evidence export',
};

const n = (x: number) => x.toLocaleString('en');

interface Limit {
  key: string;
  label: string;
  bucket: Bucket;
}
const LIMIT_COLUMNS = [
  column<Limit>('Limit', (l) => l.label),
  column<Limit>('Rate (per second)', (l) => l.bucket.rate),
  column<Limit>('Burst', (l) => l.bucket.burst),
];

export function BillingPage() {
  const { session } = useAuth();
  const tenantId = session?.kind === 'user' ? session.tenantId : '';
  const usage = useQuery({
    queryKey: ['usage', tenantId],
    queryFn: () => apiOf(session).getUsage(),
  });
  const keys = useQuery({
    queryKey: ['api-keys', tenantId, 'all'],
    queryFn: () => allPages((query) => apiOf(session).apiKeys.list(tenantId, query)),
  });

  return (
    <>
      <PageHeader title="Billing" />
      {usage.isPending ? <Loading /> : null}
      <ErrorMessage error={usage.error} />
      <ErrorMessage error={keys.error} />
      {usage.data ? (
        <>
          <section className="card" aria-labelledby="plan-title">
            <h2 id="plan-title">Plan</h2>
            <dl className="facts">
              <Fact term="Plan" testId="plan">
                {usage.data.plan}
              </Fact>
              <Fact term="Monthly quota">
                {n(usage.data.limits.monthly_quota)} requests per API key (or signed-in subject)
              </Fact>
              <Fact term="This period">
                {usage.data.period.month} (UTC), resets {formatTime(usage.data.period.reset_at)}
              </Fact>
              <Fact term="Days to reset" testId="days-to-reset">
                {usage.data.period.days_to_reset}
              </Fact>
            </dl>
          </section>
          <UsageBars usage={usage.data} keys={keys.data?.items ?? []} />
          <MonthChart usage={usage.data} />
          <DataTable
            caption={`Rate limits of the ${usage.data.plan} plan (per API key or subject)`}
            columns={LIMIT_COLUMNS}
            rows={[
              { key: '', label: 'every request', bucket: usage.data.limits.global },
              ...Object.entries(usage.data.limits.endpoints).map(([key, bucket]) => ({
                key,
                label: ENDPOINT_LABELS[key] ?? key,
                bucket,
              })),
            ]}
            rowKey={(l) => l.key}
          />
        </>
      ) : null}
    </>
  );
}

/** The tenant's requests per day of this month so far (every caller together), from `daily`. */
function MonthChart({ usage }: { usage: Usage }) {
  const total = usage.daily.reduce((sum, d) => sum + d.used, 0);
  const today = usage.daily[usage.daily.length - 1];
  return (
    <section className="card" aria-labelledby="month-title">
      <h2 id="month-title">Use per day, {usage.period.month}</h2>
      <p>
        Requests of every API key and signed-in subject of the tenant, per day (UTC):{' '}
        <span data-testid="month-total">{n(total)}</span> this month,{' '}
        <span data-testid="today-used">{n(today?.used ?? 0)}</span> today. The quota itself is per key (
        {n(usage.limits.monthly_quota)} each).
      </p>
      <BarChart
        testId="daily"
        title={`Requests per day, ${usage.period.month} (UTC)`}
        summary={`Requests per day in ${usage.period.month}: ${n(total)} in ${usage.daily.length} days, ${n(today?.used ?? 0)} today`}
        categoryLabel="Day (UTC)"
        series={[{ key: 'used', label: 'Requests', className: 'series-used' }]}
        data={usage.daily.map((d) => ({
          key: d.date,
          label: d.date.slice(8, 10),
          title: d.date,
          values: { used: d.used },
        }))}
      />
    </section>
  );
}

/** One bar per caller: this month's use against the quota (keys without use shown at zero). */
function UsageBars({ usage, keys }: { usage: Usage; keys: ApiKey[] }) {
  const quota = usage.limits.monthly_quota;
  const rows = usage.usage.map((u) => ({
    id: u.key_id ?? u.subject_id ?? '?',
    label: u.key_id
      ? (keys.find((k) => k.key_id === u.key_id)?.name ?? u.key_id)
      : `${u.subject_id} (signed in)`,
    used: u.used,
  }));
  for (const k of keys)
    if (k.status !== 'revoked' && !rows.some((r) => r.id === k.key_id))
      rows.push({ id: k.key_id, label: k.name, used: 0 });
  return (
    <section className="card" aria-labelledby="use-title">
      <h2 id="use-title">Quota use this month</h2>
      {rows.length === 0 ? (
        <Empty title="No requests counted this month." call="GET /v1/usage">
          Calls made with this tenant's keys are counted here as they happen.
        </Empty>
      ) : null}
      <ul className="bars">
        {rows.map((r) => {
          const pct = quota > 0 ? Math.min(100, (r.used / quota) * 100) : 100;
          return (
            <li key={r.id} data-key={r.id}>
              <span className="bar-label">
                {r.label} {r.label.startsWith(r.id) ? null : <span className="muted">{r.id}</span>}
              </span>
              <span
                className={pct >= 90 ? 'bar-track high' : 'bar-track'}
                role="meter"
                aria-label={`Quota use of ${r.label}`}
                aria-valuemin={0}
                aria-valuemax={quota}
                aria-valuenow={Math.min(r.used, quota)}
              >
                <span className="bar-fill" style={{ width: r.used > 0 ? `max(3px, ${pct}%)` : '0' }} />
              </span>
              <span className="bar-value" data-testid={`used-${r.id}`}>
                {n(r.used)} / {n(quota)} ({pct < 1 && r.used > 0 ? '<1' : Math.round(pct)}%)
              </span>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
