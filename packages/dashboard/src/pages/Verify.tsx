import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type {
  AuditEvent,
  AuthzenEvaluationRequest,
  VerificationStats,
  VerifyRequest,
  VerifyResponse,
} from '@mandate/client';
import { apiOf } from '../api';
import { useAuth } from '../auth';
import { BarChart } from '../chart';
import { Button, Group, Text } from '@mantine/core';
import { minorPerMajor } from '../format';
import { ReasonWords, requestOfInput, useReasonInWords } from '../reasons';
import { Reproduce } from '../snippet';
import {
  CurrencyField,
  Empty,
  ErrorMessage,
  fieldsOf,
  formatMoney,
  FormCard,
  IdToken,
  Loaded,
  PageHeader,
  SelectField,
  StateBadge,
  TextField,
  Time,
  useFields,
  useFormMutation,
  Fact,
} from '../ui';
import { DataTable, column } from '../table';
import { PLAYGROUND_FIELDS } from './VerifyShortcut';
import { AuthzenBatch, AuthzenDecision, authzenEvaluation, type PlaygroundForm } from './VerifyAuthzen';

const ASSURANCES = ['LOW', 'SUBSTANTIAL', 'HIGH'] as const;

/** Which API the playground asks: verify's own, or the same decision in AuthZEN's words (docs/API.md#authzen). */
type PlaygroundApi = 'verify' | 'authzen';
const API_CHOICES: Record<PlaygroundApi, string> = {
  verify: 'Mandate API',
  authzen: 'AuthZEN API',
};
const API_ENDPOINTS: Record<PlaygroundApi, string> = {
  verify: 'POST /v1/verify',
  authzen: 'POST /access/v1/evaluation',
};

/** The request body as the API takes it: empty fields left out, the currency in capitals. */
function verifyBody(form: PlaygroundForm): VerifyRequest {
  const t = (k: keyof PlaygroundForm) => form[k].trim();
  return {
    mandate_id: t('mandate_id'),
    action: t('action'),
    ...(t('resource') ? { resource: t('resource') } : {}),
    ...(t('amount') ? { amount: Number(t('amount')) } : {}),
    ...(t('currency') ? { currency: t('currency').toUpperCase() } : {}),
    ...(t('delegate_id') ? { delegate_id: t('delegate_id') } : {}),
    ...(t('min_assurance') ? { min_assurance: t('min_assurance') } : {}),
  };
}

type Field = ReturnType<typeof fieldsOf<keyof PlaygroundForm>>;

/**
 * The request's fields, shared by both APIs: AuthZEN always sends a subject (its id checked as the
 * delegate), so there the delegate id is required and the subject's type is asked too.
 */
function RequestFields({ form, field, api }: { form: PlaygroundForm; field: Field; api: PlaygroundApi }) {
  const amount = Number(form.amount.trim());
  const currency = form.currency.trim().toUpperCase();
  const amountHint =
    form.amount.trim() && Number.isFinite(amount) && currency.length === 3 && minorPerMajor(currency)
      ? `= ${formatMoney(amount, currency)}`
      : "In the currency's smallest unit, as the API takes it (1200 EUR cents = €12.00).";
  return (
    <>
      <div className="row">
        <TextField id="v-mandate" label="Mandate id" {...field('mandate_id')} required />
        <TextField id="v-action" label="Action" {...field('action')} placeholder="payments:create" required />
        <TextField id="v-resource" label="Resource" {...field('resource')} />
      </div>
      <div className="row">
        <TextField
          id="v-amount"
          label="Amount (minor units)"
          inputMode="numeric"
          pattern="[0-9]*"
          description={amountHint}
          {...field('amount')}
        />
        <CurrencyField id="v-currency" {...field('currency')} />
      </div>
      <div className="row">
        {api === 'authzen' ? (
          <TextField id="v-subject-type" label="Subject type" {...field('subject_type')} required />
        ) : null}
        <TextField
          id="v-delegate"
          label={
            api === 'authzen'
              ? "Subject id (the delegate id, checked against the mandate's)"
              : "Delegate id (checked against the mandate's)"
          }
          {...field('delegate_id')}
          required={api === 'authzen'}
        />
        <SelectField
          id="v-assurance"
          label="Minimum identity assurance"
          {...field('min_assurance')}
          options={['', ...ASSURANCES]}
          text={(a) => (a ? a : 'None asked')}
        />
      </div>
    </>
  );
}

/** Either API's answer, once sent: the decision and the same call to copy. */
type Asked = { api: 'verify'; body: VerifyRequest } | { api: 'authzen'; body: AuthzenEvaluationRequest };

/** The playground's form, filled from the link's query (a mandate's "Verify this mandate"). */
function usePlaygroundForm() {
  // A link may fill the request (a mandate's "Verify this mandate"); nothing is sent until Verify.
  const [params] = useSearchParams();
  const given = (k: (typeof PLAYGROUND_FIELDS)[number]) => params.get(k) ?? '';
  return useFields<keyof PlaygroundForm>({
    mandate_id: given('mandate_id'),
    action: given('action'),
    amount: given('amount'),
    currency: given('currency'),
    resource: given('resource'),
    delegate_id: given('delegate_id'),
    subject_type: 'agent',
    min_assurance: '',
  });
}

/** Asks the chosen API with the form; the request sent is kept for "Reproduce" even when it fails. */
function usePlayground(form: PlaygroundForm) {
  const { session } = useAuth();
  const queryClient = useQueryClient();
  const [api, setApi] = useState<PlaygroundApi>('verify');
  const [sent, setSent] = useState<Asked | null>(null);
  const [ask, submit] = useFormMutation({
    mutationFn: async () => {
      if (api === 'verify') {
        const body = verifyBody(form);
        setSent({ api, body });
        return { api, body, answer: await apiOf(session).verify(body) } as const;
      }
      const body = authzenEvaluation(form);
      setSent({ api, body });
      return { api, body, answer: await apiOf(session).authzen.accessEvaluation(body) } as const;
    },
    // The audit event follows the answer through the bus: ask again shortly after.
    onSuccess: () => {
      setTimeout(() => void queryClient.invalidateQueries({ queryKey: ['verifications'] }), 500);
    },
  });
  const choose = (a: PlaygroundApi) => {
    setApi(a);
    setSent(null);
    ask.reset();
  };
  return { api, choose, sent, ask, submit };
}
type Playground = ReturnType<typeof usePlayground>;

/** The buttons choosing which API the playground asks. */
function ApiChoice({ api, choose }: { api: PlaygroundApi; choose(a: PlaygroundApi): void }) {
  return (
    <Group gap={4} role="group" aria-label="API to ask" mb="sm">
      {(['verify', 'authzen'] as const).map((a) => (
        <Button
          key={a}
          type="button"
          variant={a === api ? 'filled' : 'default'}
          aria-pressed={a === api}
          onClick={() => choose(a)}
        >
          {API_CHOICES[a]}
        </Button>
      ))}
    </Group>
  );
}

/** The decision the API answered, and the request sent as a call to copy. */
function PlaygroundAnswer({ playground: { ask, sent } }: { playground: Playground }) {
  return (
    <>
      {ask.data?.api === 'verify' ? <VerifyDecision answer={ask.data.answer} asked={ask.data.body} /> : null}
      {ask.data?.api === 'authzen' ? (
        <AuthzenDecision answer={ask.data.answer} asked={ask.data.body} />
      ) : null}
      {sent?.api === 'verify' ? (
        <Reproduce id="reproduce-title" path="/v1/verify" method="verify" body={sent.body} />
      ) : null}
      {sent?.api === 'authzen' ? (
        <Reproduce
          id="reproduce-title"
          path="/access/v1/evaluation"
          method="authzen.accessEvaluation"
          body={sent.body}
        />
      ) : null}
    </>
  );
}

/** Where the recent verifications would be, for a role without events:read. */
function RecentNeedsEvents() {
  return (
    <section className="card" aria-labelledby="recent-title">
      <h2 id="recent-title">Recent verifications</h2>
      <p className="muted" data-testid="recent-needs-events">
        Recent verifications and their chart come from the audit log: they need the events:read permission,
        which your role does not hold. The playground above works without it.
      </p>
    </section>
  );
}

/** POST /v1/verify (or its AuthZEN form) from a form: the decision and its reason, exactly as an integrator would get them. */
export function VerifyPage() {
  const { canReadEvents: canEvents } = useAuth();
  const { values: form, field } = usePlaygroundForm();
  const playground = usePlayground(form);
  const { api, choose, ask, submit } = playground;
  return (
    <>
      <PageHeader
        title="Verification playground"
        description={
          <>
            Asks <code>POST /v1/verify</code> — or the same decision in the words of the OpenID AuthZEN
            Authorization API, as an API gateway would — whether a delegate may do an action now, as your
            integration would. Each decision is recorded in the audit log (VERIFICATION_PERFORMED).
          </>
        }
      />
      <FormCard id="verify-title" title="Request" onSubmit={submit}>
        <ApiChoice api={api} choose={choose} />
        <Text size="sm" mb="xs" data-testid="playground-endpoint">
          Sends <code>{API_ENDPOINTS[api]}</code>.
        </Text>
        <RequestFields form={form} field={field} api={api} />
        <Button type="submit" loading={ask.isPending}>
          {api === 'verify' ? 'Verify' : 'Evaluate'}
        </Button>
        <ErrorMessage error={ask.error} />
      </FormCard>
      <PlaygroundAnswer playground={playground} />
      {api === 'authzen' ? <AuthzenBatch form={form} /> : null}
      {canEvents ? <RecentVerifications /> : <RecentNeedsEvents />}
    </>
  );
}

/**
 * POST /v1/verify's answer: the decision, its reason in words (the comparison that failed, from the
 * request asked and the mandate: docs/API.md#reasons-in-words) and as code, the mandate's state.
 */
function VerifyDecision({ answer: d, asked }: { answer: VerifyResponse; asked: VerifyRequest }) {
  const words = useReasonInWords(d.reason, { request: asked, mandateId: d.mandate_id, live: true });
  return (
    <section className="card" aria-labelledby="decision-title" aria-live="polite">
      <h2 id="decision-title">
        Decision: <StateBadge state={d.decision} testId="decision" />
      </h2>
      <Text fw={600} mb="xs" data-testid="reason-words" data-reason={d.reason}>
        {words}
      </Text>
      <dl className="facts">
        <Fact term="Reason code">
          <code data-testid="reason">{d.reason}</code>
        </Fact>
        <Fact term="Mandate state">
          <StateBadge state={d.mandate_state} />
        </Fact>
        <Fact term="Mandate version">{d.mandate_version}</Fact>
        <Fact term="Decision id">
          <IdToken id={d.decision_id} full />
        </Fact>
      </dl>
    </section>
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
  column<AuditEvent>('Time', (e) => <Time iso={e.occurred_at} />),
  column<AuditEvent>('Mandate', (e) =>
    e.resource ? <IdToken id={e.resource.id} to={`/mandates/${e.resource.id}`} /> : '—',
  ),
  column<AuditEvent>('Action', (e) => actionOf(e) ?? '—'),
  column<AuditEvent>('Decision', (e) => <StateBadge state={textOf(e.data.decision) ?? '—'} />),
  column<AuditEvent>('Reason', (e) => {
    const reason = textOf(e.data.reason);
    return reason ? (
      <ReasonWords reason={reason} request={requestOfInput(e.data.input)} mandateId={e.resource?.id} />
    ) : (
      '—'
    );
  }),
];

function chartData(range: ChartWindow, stats: VerificationStats) {
  return stats.buckets.map((b) => ({
    key: b.start.slice(0, range === '24h' ? 13 : 10),
    label: b.start.slice(range === '24h' ? 11 : 8, range === '24h' ? 13 : 10),
    title: range === '24h' ? `${b.start.slice(0, 10)} ${b.start.slice(11, 13)}:00 UTC` : b.start.slice(0, 10),
    values: { allow: b.allow, deny: b.deny },
  }));
}

/** The buttons choosing the chart's range. */
function RangeChoice({ range, setRange }: { range: ChartWindow; setRange(w: ChartWindow): void }) {
  return (
    <Group gap={4} role="group" aria-label="Chart range">
      {(['24h', '14d'] as const).map((w) => (
        <Button
          key={w}
          variant={w === range ? 'filled' : 'default'}
          aria-pressed={w === range}
          onClick={() => setRange(w)}
        >
          {w === '24h' ? 'Last 24 hours, per hour' : 'Last 14 days, per day'}
        </Button>
      ))}
    </Group>
  );
}

/** The range's ALLOW and DENY totals and the chart of them per hour or day. */
function VerificationChart({ range, stats }: { range: ChartWindow; stats: VerificationStats }) {
  const counts = chartData(range, stats);
  const allow = counts.reduce((s, c) => s + c.values.allow, 0);
  const deny = counts.reduce((s, c) => s + c.values.deny, 0);
  const span = range === '24h' ? 'the last 24 hours' : 'the last 14 days';
  const Span = span[0]!.toUpperCase() + span.slice(1);
  return (
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
  );
}

/** The newest verifications as a table, or what to do when there is none yet. */
function RecentList({ events }: { events: AuditEvent[] }) {
  return events.length === 0 ? (
    <Empty title="No verification yet." call="POST /v1/verify">
      Ask one with the form above: it is listed here within seconds.
    </Empty>
  ) : (
    <DataTable
      caption="The newest verifications"
      columns={RECENT_COLUMNS}
      rows={events}
      rowKey={(e) => e.id}
      rowProps={() => ({ 'data-testid': 'recent-verification' })}
    />
  );
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
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['verifications', tenantId] });
  return (
    <section className="card" aria-labelledby="recent-title">
      <h2 id="recent-title">Recent verifications</h2>
      <div className="row">
        <RangeChoice range={range} setRange={setRange} />
        <Button variant="default" onClick={refresh} disabled={stats.isFetching || recent.isFetching}>
          Refresh
        </Button>
      </div>
      <Loaded query={stats}>{(data) => <VerificationChart range={range} stats={data} />}</Loaded>
      <ErrorMessage error={recent.error} />
      {recent.data ? <RecentList events={recent.data.data} /> : null}
    </section>
  );
}
