import { useState } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { allPages, call } from '../api';
import { useAuth } from '../auth';
import { BarChart } from '../chart';
import { ErrorMessage, Loading, PageHeader, FormCard, formatTime, useFormMutation } from '../ui';

interface Decision {
  decision: 'ALLOW' | 'DENY';
  reason: string;
  mandate_id: string;
  mandate_state: string;
  mandate_version: number;
}

/** POST /v1/verify from a form: the decision and its reason, exactly as an integrator would get them. */
export function VerifyPage() {
  const { session, permissions } = useAuth();
  const queryClient = useQueryClient();
  const canEvents = !!permissions?.includes('events:read');
  const [form, setForm] = useState({ mandate_id: '', action: '', amount: '', currency: '', resource: '' });
  const set = (k: keyof typeof form) => (e: { target: { value: string } }) =>
    setForm((f) => ({ ...f, [k]: e.target.value }));
  const [verify, submit] = useFormMutation({
    mutationFn: () =>
      call<Decision>(session, 'POST', '/v1/verify', {
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
          <label htmlFor="v-mandate">Mandate id</label>
          <input id="v-mandate" value={form.mandate_id} onChange={set('mandate_id')} required />
          <label htmlFor="v-action">Action</label>
          <input
            id="v-action"
            value={form.action}
            onChange={set('action')}
            placeholder="payments:create"
            required
          />
        </div>
        <div className="row">
          <label htmlFor="v-amount">Amount (minor units)</label>
          <input
            id="v-amount"
            inputMode="numeric"
            pattern="[0-9]*"
            value={form.amount}
            onChange={set('amount')}
          />
          <label htmlFor="v-currency">Currency</label>
          <input
            id="v-currency"
            value={form.currency}
            onChange={set('currency')}
            placeholder="EUR"
            maxLength={3}
          />
          <label htmlFor="v-resource">Resource</label>
          <input id="v-resource" value={form.resource} onChange={set('resource')} />
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

interface VerificationEvent {
  id: string;
  occurred_at: string;
  resource: { type: string; id: string } | null;
  data: { decision?: string; reason?: string; input?: { action?: string } };
}

type ChartWindow = '24h' | '14d';
const HOUR = 3_600_000;
const DAY = 86_400_000;
/** The newest events read per range (20 pages of 100); beyond them the chart says it counts only those. */
const MAX_PAGES = 20;

/** The range's buckets, oldest first: the last 24 whole UTC hours or 14 UTC days, the current one included. */
export function buckets(
  range: ChartWindow,
  now: number,
): { start: number; key: string; label: string; title: string }[] {
  const size = range === '24h' ? HOUR : DAY;
  const count = range === '24h' ? 24 : 14;
  const current = Math.floor(now / size) * size;
  return Array.from({ length: count }, (_, i) => {
    const start = current - (count - 1 - i) * size;
    const iso = new Date(start).toISOString();
    return range === '24h'
      ? {
          start,
          key: iso.slice(0, 13),
          label: iso.slice(11, 13),
          title: `${iso.slice(0, 10)} ${iso.slice(11, 13)}:00 UTC`,
        }
      : { start, key: iso.slice(0, 10), label: iso.slice(8, 10), title: iso.slice(0, 10) };
  });
}

/** ALLOW and DENY per bucket of the range, counted from the events. */
export function countDecisions(events: VerificationEvent[], range: ChartWindow, now: number) {
  const size = range === '24h' ? HOUR : DAY;
  const all = buckets(range, now);
  const first = all[0]!.start;
  const counts = all.map((b) => ({
    key: b.key,
    label: b.label,
    title: b.title,
    values: { allow: 0, deny: 0 },
  }));
  for (const e of events) {
    const i = Math.floor((Date.parse(e.occurred_at) - first) / size);
    const bucket = counts[i];
    if (!bucket) continue;
    if (e.data.decision === 'ALLOW') bucket.values.allow++;
    else if (e.data.decision === 'DENY') bucket.values.deny++;
  }
  return counts;
}

/** The audit trail's VERIFICATION_PERFORMED events of the range: ALLOW/DENY over time and the newest ones listed. */
function RecentVerifications() {
  const { session } = useAuth();
  const tenantId = session?.kind === 'user' ? session.tenantId : '';
  const [range, setRange] = useState<ChartWindow>('24h');
  const verifications = useQuery({
    queryKey: ['verifications', tenantId, range],
    queryFn: async () => {
      const now = Date.now();
      const since = new Date(buckets(range, now)[0]!.start).toISOString();
      const page = await allPages<VerificationEvent>(
        session,
        '/v1/events',
        { type: 'VERIFICATION_PERFORMED', since },
        MAX_PAGES,
      );
      return { ...page, now };
    },
  });
  const data = verifications.data;
  const counts = data ? countDecisions(data.items, range, data.now) : [];
  const allow = counts.reduce((s, c) => s + c.values.allow, 0);
  const deny = counts.reduce((s, c) => s + c.values.deny, 0);
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
          onClick={() => void verifications.refetch()}
          disabled={verifications.isFetching}
        >
          Refresh
        </button>
      </div>
      {verifications.isPending ? <Loading /> : null}
      <ErrorMessage error={verifications.error} />
      {data ? (
        <>
          <p data-testid="verification-totals">
            {Span} (UTC): <span className="decision-allow">{allow} ALLOW</span>,{' '}
            <span className="decision-deny">{deny} DENY</span>
            {data.truncated
              ? ` — the newest ${data.items.length.toLocaleString('en')} verifications only; older ones in the range are not counted`
              : ''}
            .
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
          {data.items.length === 0 ? (
            <p>No verification in {span}.</p>
          ) : (
            <table>
              <caption>The newest verifications</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Mandate</th>
                  <th scope="col">Action</th>
                  <th scope="col">Decision</th>
                  <th scope="col">Reason</th>
                </tr>
              </thead>
              <tbody>
                {data.items.slice(0, 10).map((e) => (
                  <tr key={e.id} data-testid="recent-verification">
                    <td>{formatTime(e.occurred_at)}</td>
                    <td>
                      {e.resource ? <Link to={`/mandates/${e.resource.id}`}>{e.resource.id}</Link> : '—'}
                    </td>
                    <td>{e.data.input?.action ?? '—'}</td>
                    <td className={e.data.decision === 'ALLOW' ? 'decision-allow' : 'decision-deny'}>
                      {e.data.decision}
                    </td>
                    <td>{e.data.reason}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      ) : null}
    </section>
  );
}
