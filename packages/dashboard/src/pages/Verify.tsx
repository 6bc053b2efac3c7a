import { useState } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import type { AuditEvent, VerificationStats } from '@mandate/client';
import { apiOf } from '../api';
import { useAuth } from '../auth';
import { BarChart } from '../chart';
import {
  ErrorMessage,
  Loaded,
  PageHeader,
  FormCard,
  TextField,
  formatTime,
  useFields,
  useFormMutation,
} from '../ui';
import { DataTable, column } from '../table';

/** POST /v1/verify from a form: the decision and its reason, exactly as an integrator would get them. */
export function VerifyPage() {
  const { session, permissions } = useAuth();
  const queryClient = useQueryClient();
  const canEvents = !!permissions?.includes('events:read');
  const { values: form, field } = useFields({
    mandate_id: '',
    action: '',
    amount: '',
    currency: '',
    resource: '',
  });
  const [verify, submit] = useFormMutation({
    mutationFn: () =>
      apiOf(session).verify({
        mandate_id: form.mandate_id.trim(),
        action: form.action.trim(),
        ...(form.amount.trim() ? { amount: Number(form.amount) } : {}),
        ...(form.currency.trim() ? { currency: form.currency.trim().toUpperCase() } : {}),
        ...(form.resource.trim() ? { resource: form.resource.trim() } : {}),
      }),
    // The audit event follows the answer through the bus: ask again shortly after.
    onSuccess: () => {
      setTimeout(() => void queryClient.invalidateQueries({ queryKey: ['verifications'] }), 500);
    },
  });
  const d = verify.data;
  return (
    <>
      <PageHeader title="Verification playground" />
      <p>
        Asks <code>POST /v1/verify</code> whether a delegate may do an action now, as your integration would.
        Each call is recorded in the audit log (VERIFICATION_PERFORMED).
      </p>
      <FormCard id="verify-title" title="Request" onSubmit={submit}>
        <div className="row">
          <TextField id="v-mandate" label="Mandate id" {...field('mandate_id')} required />
          <TextField
            id="v-action"
            label="Action"
            {...field('action')}
            placeholder="payments:create"
            required
          />
        </div>
        <div className="row">
          <TextField
            id="v-amount"
            label="Amount (minor units)"
            inputMode="numeric"
            pattern="[0-9]*"
            {...field('amount')}
          />
          <TextField
            id="v-currency"
            label="Currency"
            {...field('currency')}
            placeholder="EUR"
            maxLength={3}
          />
          <TextField id="v-resource" label="Resource" {...field('resource')} />
        </div>
        <button type="submit" disabled={verify.isPending}>
          Verify
        </button>
        <ErrorMessage error={verify.error} />
      </FormCard>
      {d ? (
        <section aria-labelledby="decision-title" aria-live="polite">
          <h2 id="decision-title">
            Decision: <span data-testid="decision">{d.decision}</span>
          </h2>
          <dl className="facts">
            <dt>Reason</dt>
            <dd data-testid="reason">{d.reason}</dd>
            <dt>Mandate state</dt>
            <dd>{d.mandate_state}</dd>
            <dt>Mandate version</dt>
            <dd>{d.mandate_version}</dd>
          </dl>
        </section>
      ) : null}
      {canEvents ? (
        <RecentVerifications />
      ) : (
        <section className="card" aria-labelledby="recent-title">
          <h2 id="recent-title">Recent verifications</h2>
          <p className="muted" data-testid="recent-needs-events">
            Recent verifications and their chart come from the audit log: they need the events:read
            permission, which your role does not hold. The playground above works without it.
          </p>
        </section>
      )}
    </>
  );
}

/** A string member of an event's data (no contract types `data` per event type), else undefined. */
const textOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const actionOf = (e: AuditEvent) => {
  const input = e.data.input;
  return input && typeof input === 'object' ? textOf((input as Record<string, unknown>).action) : undefined;
};

type ChartWindow = '24h' | '14d';

/** The chart's bars: the last 24 UTC hours or 14 UTC days, the current one (partial) included. */
const RECENT_COLUMNS = [
  column<AuditEvent>('Time', (e) => formatTime(e.occurred_at)),
  column<AuditEvent>('Mandate', (e) =>
    e.resource ? <Link to={`/mandates/${e.resource.id}`}>{e.resource.id}</Link> : '—',
  ),
  column<AuditEvent>('Action', (e) => actionOf(e) ?? '—'),
  column<AuditEvent>('Decision', (e) => textOf(e.data.decision), {
    className: (e) => (e.data.decision === 'ALLOW' ? 'decision-allow' : 'decision-deny'),
  }),
  column<AuditEvent>('Reason', (e) => textOf(e.data.reason)),
];

function chartData(range: ChartWindow, stats: VerificationStats) {
  return stats.buckets.map((b) => ({
    key: b.start.slice(0, range === '24h' ? 13 : 10),
    label: b.start.slice(range === '24h' ? 11 : 8, range === '24h' ? 13 : 10),
    title: range === '24h' ? `${b.start.slice(0, 10)} ${b.start.slice(11, 13)}:00 UTC` : b.start.slice(0, 10),
    values: { allow: b.allow, deny: b.deny },
  }));
}

/** ALLOW/DENY over time (counted by the audit service) and the newest verifications listed. */
function RecentVerifications() {
  const { session } = useAuth();
  const queryClient = useQueryClient();
  const tenantId = session?.kind === 'user' ? session.tenantId : '';
  const [range, setRange] = useState<ChartWindow>('24h');
  const stats = useQuery({
    queryKey: ['verifications', tenantId, 'stats', range],
    // Without since the audit service answers the last 24 hours or 14 days, the current bucket last.
    queryFn: () => apiOf(session).events.getVerificationStats({ bucket: range === '24h' ? 'hour' : 'day' }),
  });
  const recent = useQuery({
    queryKey: ['verifications', tenantId, 'recent'],
    queryFn: () => apiOf(session).events.list({ type: 'VERIFICATION_PERFORMED', limit: 10 }).page(),
  });
  const counts = stats.data ? chartData(range, stats.data) : [];
  const allow = counts.reduce((s, c) => s + c.values.allow, 0);
  const deny = counts.reduce((s, c) => s + c.values.deny, 0);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['verifications', tenantId] });
  const span = range === '24h' ? 'the last 24 hours' : 'the last 14 days';
  const Span = span[0]!.toUpperCase() + span.slice(1);
  return (
    <section className="card" aria-labelledby="recent-title">
      <h2 id="recent-title">Recent verifications</h2>
      <div className="row">
        <div className="segmented" role="group" aria-label="Chart range">
          {(['24h', '14d'] as const).map((w) => (
            <button
              key={w}
              type="button"
              className={w === range ? undefined : 'secondary'}
              aria-pressed={w === range}
              onClick={() => setRange(w)}
            >
              {w === '24h' ? 'Last 24 hours, per hour' : 'Last 14 days, per day'}
            </button>
          ))}
        </div>
        <button
          type="button"
          className="secondary"
          onClick={refresh}
          disabled={stats.isFetching || recent.isFetching}
        >
          Refresh
        </button>
      </div>
      <Loaded query={stats}>
        {() => (
          <>
            <p data-testid="verification-totals">
              {Span} (UTC): <span className="decision-allow">{allow} ALLOW</span>,{' '}
              <span className="decision-deny">{deny} DENY</span>.
            </p>
            <BarChart
              testId="verifications"
              title={`Verifications per ${range === '24h' ? 'hour' : 'day'}, ${span} (UTC)`}
              summary={`Verifications per ${range === '24h' ? 'hour' : 'day'} over ${span}: ${allow} ALLOW and ${deny} DENY`}
              categoryLabel={range === '24h' ? 'Hour (UTC)' : 'Day (UTC)'}
              series={[
                { key: 'allow', label: 'ALLOW', className: 'series-allow' },
                { key: 'deny', label: 'DENY', className: 'series-deny' },
              ]}
              data={counts}
            />
          </>
        )}
      </Loaded>
      <ErrorMessage error={recent.error} />
      {recent.data ? (
        recent.data.data.length === 0 ? (
          <p>No verification yet.</p>
        ) : (
          <DataTable
            caption="The newest verifications"
            columns={RECENT_COLUMNS}
            rows={recent.data.data}
            rowKey={(e) => e.id}
            rowProps={() => ({ 'data-testid': 'recent-verification' })}
          />
        )
      ) : null}
    </section>
  );
}
