import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Paper, Text, Title } from '@mantine/core';
import type { Authorization, BudgetState, Mandate } from '@mandate/client';
import { apiOf } from '../api';
import { useAuth } from '../auth';
import { ConfirmDialog } from '../confirm';
import { formatMoney } from '../format';
import { PagedTable, usePagedList } from '../paged-list';
import { column } from '../table';
import { Empty, ErrorMessage, IdToken, Loading, RowAction, StateBadge, Time, notifyDone } from '../ui';

/** The period in words: "Each month (Europe/Berlin)", "In total (never resets)". */
function periodText(b: BudgetState): string {
  if (b.period === 'total') return 'In total (never resets)';
  const each = { day: 'Each day', week: 'Each ISO week (from Monday)', month: 'Each month' }[b.period];
  return `${each} (${b.timezone})`;
}

/** A share of the budget as a CSS width; a non-zero share never rounds to nothing. */
const share = (part: number, whole: number) => (part <= 0 ? '0%' : `${Math.max(0.5, (part / whole) * 100)}%`);

/**
 * The budget of the current period as a bar, captured then held then available
 * (docs/API.md#budgets: held + captured never exceed the amount), with each figure in words and
 * the period's end.
 */
export function BudgetBar({ budget: b }: { budget: BudgetState }) {
  const money = (minor: number) => formatMoney(minor, b.currency);
  return (
    <div data-testid="budget">
      <div className="budget-summary">
        <Text fw={600}>
          {money(b.amount)} <span className="muted">{periodText(b)}</span>
        </Text>
        <Text size="sm" c="dimmed" data-testid="budget-period-end">
          {b.period_end ? (
            <>
              This period: <Time iso={b.period_start} /> to <Time iso={b.period_end} />
            </>
          ) : (
            <>
              Counting since <Time iso={b.period_start} />
            </>
          )}
        </Text>
      </div>
      <div
        className="budget-bar"
        role="img"
        aria-label={`${money(b.captured)} captured, ${money(b.held)} held, ${money(b.available)} available of ${money(b.amount)}`}
        data-testid="budget-bar"
      >
        <span className="budget-captured" style={{ width: share(b.captured, b.amount) }} />
        <span className="budget-held" style={{ width: share(b.held, b.amount) }} />
      </div>
      <dl className="budget-legend">
        <div>
          <dt>
            <span className="budget-key budget-captured" aria-hidden /> Captured (spent)
          </dt>
          <dd data-testid="budget-captured">{money(b.captured)}</dd>
        </div>
        <div>
          <dt>
            <span className="budget-key budget-held" aria-hidden /> Held
          </dt>
          <dd data-testid="budget-held">{money(b.held)}</dd>
        </div>
        <div>
          <dt>
            <span className="budget-key budget-available" aria-hidden /> Available
          </dt>
          <dd data-testid="budget-available">{money(b.available)}</dd>
        </div>
      </dl>
    </div>
  );
}

/** Voiding one HELD authorization behind a confirmation; the budget and the list are read again after. */
function useVoid(m: Mandate) {
  const { session } = useAuth();
  const queryClient = useQueryClient();
  const [asked, setAsked] = useState<Authorization | null>(null);
  const voiding = useMutation({
    mutationFn: (a: Authorization) => apiOf(session).budgets.voidAuthorization(a.id),
    onSuccess: (a) => {
      setAsked(null);
      notifyDone(`Hold ${a.id} voided: ${formatMoney(a.amount, a.currency)} released.`, 'void-done');
      void queryClient.invalidateQueries({ queryKey: ['budget', m.id] });
      void queryClient.invalidateQueries({ queryKey: ['authorizations', m.id] });
    },
  });
  const close = () => {
    setAsked(null);
    voiding.reset();
  };
  return { asked, setAsked, voiding, close };
}
type Void = ReturnType<typeof useVoid>;

/** Asks before a hold is voided, saying what it releases. */
function ConfirmVoid({ void_: { asked, voiding, close } }: { void_: Void }) {
  return (
    <ConfirmDialog
      opened={!!asked}
      title="Void hold"
      confirm="Void hold"
      pending={voiding.isPending}
      error={asked ? voiding.error : null}
      onClose={close}
      onConfirm={() => asked && voiding.mutate(asked)}
      impact={
        asked ? (
          <>
            {formatMoney(asked.amount, asked.currency)} held by {asked.id} goes back to the budget, and the
            delegate can no longer capture it. This cannot be undone.
          </>
        ) : null
      }
    />
  );
}

/** The authorizations table's columns; with `ask`, a Void on each HELD one. */
function authorizationColumns(ask?: (a: Authorization) => void) {
  return [
    column<Authorization>('Authorization', (a) => <IdToken id={a.id} />),
    column<Authorization>('Action', (a) => a.action),
    column<Authorization>('Amount', (a) => formatMoney(a.amount, a.currency)),
    column<Authorization>('Captured', (a) =>
      a.status === 'CAPTURED' ? formatMoney(a.captured_amount, a.currency) : '—',
    ),
    column<Authorization>('Status', (a) => <StateBadge state={a.status} />),
    column<Authorization>('Expires', (a) => (a.status === 'HELD' ? <Time iso={a.expires_at} /> : '—')),
    ...(ask
      ? [
          column<Authorization>('Actions', (a) =>
            a.status === 'HELD' ? (
              <RowAction subject={`hold ${a.id}`} danger onClick={() => ask(a)}>
                Void
              </RowAction>
            ) : null,
          ),
        ]
      : []),
  ];
}

/** The current period's budget bar, or that the mandate has none. */
function BudgetNow({ m }: { m: Mandate }) {
  const { session } = useAuth();
  const budget = useQuery({
    queryKey: ['budget', m.id],
    queryFn: () => apiOf(session).budgets.get(m.id),
    enabled: !!m.scope.budget,
  });
  return m.scope.budget ? (
    <Paper withBorder p="md" mb="md">
      {budget.isPending ? <Loading /> : null}
      <ErrorMessage error={budget.error} />
      {budget.data ? <BudgetBar budget={budget.data} /> : null}
    </Paper>
  ) : (
    <Text size="sm" c="dimmed" mb="sm">
      No budget: this mandate caps each call only. Its authorizations record spend without a limit.
    </Text>
  );
}

/**
 * A mandate's budget and its authorizations (docs/DASHBOARD.md "Budgets"): the bar of the current
 * period, the authorizations newest first, and, for whoever may change the mandate and spend
 * (mandates:write and verify, as the API's void asks), a Void on each HELD one behind a confirmation.
 */
export function BudgetSection({ mandate: m, canChange }: { mandate: Mandate; canChange: boolean }) {
  const { permissions } = useAuth();
  const list = usePagedList<Authorization>({
    key: ['authorizations', m.id],
    read: (api, query) => api.budgets.listAuthorizations(m.id, query),
    limit: 10,
  });
  const canVoid = canChange && !!permissions?.includes('verify');
  const void_ = useVoid(m);

  return (
    <section aria-labelledby="budget-title" className="card">
      <Title order={2} size="h4" id="budget-title" mb="xs">
        Budget
      </Title>
      <BudgetNow m={m} />
      <Title order={3} size="h5" mb="xs">
        Authorizations
      </Title>
      <PagedTable
        list={list}
        testId="authorizations"
        caption="Authorizations of this mandate, newest first"
        rowKey={(a) => a.id}
        rowProps={(a) => ({ 'data-authorization': a.id })}
        columns={authorizationColumns(canVoid ? void_.setAsked : undefined)}
        empty={
          <Empty title="No authorizations." call={`POST /v1/mandates/${m.id}/authorizations`}>
            The delegate holds an amount before it spends; holds, captures and voids show here.
          </Empty>
        }
      />
      <ConfirmVoid void_={void_} />
    </section>
  );
}
