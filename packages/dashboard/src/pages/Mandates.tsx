import { useState } from 'react';
import { useMutation, useQuery, useQueryClient, type UseQueryResult } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { Button, Group, Paper, Text, TextInput, Textarea, Title } from '@mantine/core';
import { BadgeCheck, Ban, CirclePause, CirclePlay, Plus } from 'lucide-react';
import { MANDATE_STATES as STATES, type AuditEvent, type Mandate } from '@mandate/client';
import { apiOf, oneOf } from '../api';
import type { Area } from '../areas';
import { useAreaAuth } from '../auth';
import { budgetText, constraintsText, Cut, relativeTime, shortId } from '../format';
import {
  Dialog,
  Empty,
  ErrorMessage,
  IdToken,
  Loading,
  PageHeader,
  SelectField,
  StateBadge,
  TextField,
  Time,
  Fact,
} from '../ui';
import { column } from '../table';
import { PagedTable, usePagedList } from '../paged-list';
import { BudgetSection } from './Budget';
import { Evidence } from './Evidence';
import { MandatePageHeader } from './MandatePageHeader';
import { VerifyShortcut } from './VerifyShortcut';
import { ReasonWords, requestOfInput } from '../reasons';

/** Whether the API answered 404 (the client's error carries the status). */
const isNotFound = (error: unknown) => (error as { status?: number } | null)?.status === 404;

/**
 * A mandate's state as a badge; an ACTIVE one whose validity starts later says when it starts
 * ("Starts in 3 days", amber): verify denies it until then, so it is not shown as active.
 */
function MandateState({ m, testId }: { m: Mandate; testId?: string }) {
  if (m.state === 'ACTIVE' && m.valid_from && Date.parse(m.valid_from) > Date.now())
    return (
      <StateBadge state="SCHEDULED" testId={testId}>
        Starts {relativeTime(m.valid_from)}
      </StateBadge>
    );
  return <StateBadge state={m.state} testId={testId} />;
}

/** A party (principal or delegate): its name beside its id (cut when long), and a mark where the principal's identity was verified. */
function Party({ party }: { party: Mandate['principal'] | Mandate['delegate'] }) {
  const verified = 'verified' in party && party.verified;
  return (
    <span className="party">
      {party.name ? <span className="party-name">{party.name}</span> : null}
      <Cut value={party.id} />
      {verified ? (
        <BadgeCheck
          size={16}
          className="verified-mark"
          aria-label={`identity verified (${verified.assurance})`}
          role="img"
        />
      ) : null}
    </span>
  );
}

const COLUMNS = [
  column<Mandate>('Mandate', (m) => <IdToken id={m.id} to={`/mandates/${m.id}`} />),
  column<Mandate>('Principal', (m) => <Party party={m.principal} />),
  column<Mandate>('Delegate', (m) => <Party party={m.delegate} />),
  column<Mandate>('Actions', (m) => m.scope.actions.join(', ')),
  column<Mandate>('Limit', (m) => constraintsText(m.scope.constraints)),
  column<Mandate>('State', (m) => <MandateState m={m} />),
  // The time alone (its relative hint on hover): a dense list keeps its columns narrow.
  // The order the API pages in (creation): its header turns the whole list around, not this page.
  column<Mandate>('Created', (m) => <Time iso={m.created_at} hint={false} />, { sortable: true }),
];

export function MandatesPage({ area }: { area: Area }) {
  const { canWrite } = useAreaAuth(area);
  const mandates = usePagedList<Mandate, 'q' | 'state' | 'principal_id' | 'delegate_id'>({
    key: ['mandates'],
    read: (api, query) => api.mandates.list({ ...query, state: oneOf(STATES, query.state) }),
    filters: { q: '', state: '', principal_id: '', delegate_id: '' },
    ordered: true,
  });
  return (
    <>
      <PageHeader
        title="Mandates"
        description="Signed delegations: who (principal) lets whom (delegate) do what, up to which amount, until when."
      >
        {canWrite ? (
          <Button component={Link} to="/mandates/new" leftSection={<Plus size={16} aria-hidden />}>
            Create mandate
          </Button>
        ) : null}
      </PageHeader>
      <div className="row">
        <TextField
          id="mandate-search"
          type="search"
          label="Search"
          placeholder="Part of an id or name"
          title="Part of a principal's or delegate's id or name, in any case"
          maxLength={200}
          {...mandates.field('q')}
        />
        <SelectField id="state-filter" label="State" {...mandates.field('state')} options={STATES} any />
        <TextField id="principal-filter" label="Principal id" {...mandates.field('principal_id')} />
        <TextField id="delegate-filter" label="Delegate id" {...mandates.field('delegate_id')} />
      </div>
      <PagedTable
        list={mandates}
        csv="mandates"
        testId="mandates"
        caption={mandates.order === 'asc' ? 'Mandates, oldest first' : 'Mandates, newest first'}
        columns={COLUMNS}
        rowKey={(m) => m.id}
        rowProps={(m) => ({ 'data-mandate': m.id })}
        empty={
          <Empty title="No mandates." call="POST /v1/mandates">
            {canWrite ? (
              <>
                None matches these filters yet. <Link to="/mandates/new">Create a mandate</Link>, or clear a
                filter.
              </>
            ) : (
              'None matches these filters. Your role reads mandates; one with mandates:write creates them.'
            )}
          </Empty>
        }
      />
    </>
  );
}

type Op = 'suspend' | 'reactivate' | 'revoke';
const TRANSITIONS: Record<string, { op: Op; label: string }[]> = {
  ACTIVE: [
    { op: 'suspend', label: 'Suspend' },
    { op: 'revoke', label: 'Revoke' },
  ],
  SUSPENDED: [
    { op: 'reactivate', label: 'Reactivate' },
    { op: 'revoke', label: 'Revoke' },
  ],
};
const OP_TEXT: Record<Op, { title: string; confirm: string; says: string }> = {
  suspend: {
    title: 'Suspend mandate',
    confirm: 'Suspend mandate',
    says: 'While suspended, every verification of this mandate is denied (MANDATE_SUSPENDED). It can be reactivated.',
  },
  reactivate: {
    title: 'Reactivate mandate',
    confirm: 'Reactivate mandate',
    says: 'The mandate allows its actions again, as before its suspension.',
  },
  revoke: {
    title: 'Revoke mandate',
    confirm: 'Revoke mandate',
    says: 'A revoked mandate allows nothing, ever again: this cannot be undone. Offline verifiers learn it from the status list.',
  },
};

/** The state change asked for (suspend, reactivate, revoke), its reason and typed confirmation. */
function useLifecycle(id: string, session: ReturnType<typeof useAreaAuth>['session']) {
  const queryClient = useQueryClient();
  const [asked, setAsked] = useState<Op | null>(null);
  const [reason, setReason] = useState('');
  const [typed, setTyped] = useState('');
  const close = () => {
    setAsked(null);
    setReason('');
    setTyped('');
    transition.reset();
  };
  const transition = useMutation({
    mutationFn: (op: Op) => apiOf(session).mandates[op](id, { reason: reason.trim() }),
    onSuccess: (m) => {
      close();
      queryClient.setQueryData(['mandate', id], m);
      void queryClient.invalidateQueries({ queryKey: ['mandates'] });
      // The event follows the change through the bus: ask again shortly after.
      setTimeout(() => void queryClient.invalidateQueries({ queryKey: ['mandate-events', id] }), 500);
    },
  });
  return { asked, setAsked, reason, setReason, typed, setTyped, close, transition };
}
type Lifecycle = ReturnType<typeof useLifecycle>;

/** Who the principal is, as verified by a wallet when the mandate was created (or not). */
function PrincipalIdentity({ m }: { m: Mandate }) {
  return m.principal.verified ? (
    <>
      <StateBadge state="VERIFIED">Verified · {m.principal.verified.assurance}</StateBadge>{' '}
      <span className="muted">
        by wallet (OpenID4VP) <Time iso={m.principal.verified.verified_at} />, issuer{' '}
        {m.principal.verified.issuer}
      </span>
    </>
  ) : (
    'Not verified (no wallet verification when the mandate was created)'
  );
}

/** The mandate's signature and where an offline verifier finds its status. */
function SignatureFacts({ m }: { m: Mandate }) {
  return (
    <>
      <Fact term="Version">{m.version}</Fact>
      <Fact term="Signature">
        ES256, key <code>{m.signature.kid}</code>
      </Fact>
      <Fact term="Status list">
        {m.status ? (
          <>
            <a href={m.status.status_list.uri}>{m.status.status_list.uri.split('/').pop()}</a>, index{' '}
            {m.status.status_list.idx}
          </>
        ) : (
          'None (verified online only)'
        )}
      </Fact>
    </>
  );
}

/** What the mandate says: its parties, scope, validity and signature. */
function MandateFacts({ m, short }: { m: Mandate; short: string }) {
  return (
    <Paper withBorder p="md" mb="lg">
      <dl className="facts">
        <Fact term="State">
          <MandateState m={m} testId="mandate-state" />
        </Fact>
        <Fact term="Mandate id">
          <IdToken id={m.id} full /> <span className="muted">short id {short}</span>
        </Fact>
        <Fact term="Principal">
          {m.principal.id} ({m.principal.type ?? 'no type'}){m.principal.name ? `, ${m.principal.name}` : ''}
        </Fact>
        <Fact term="Identity" testId="principal-verified">
          <PrincipalIdentity m={m} />
        </Fact>
        <Fact term="Delegate">
          {m.delegate.id} ({m.delegate.type ?? 'no type'})
        </Fact>
        <Fact term="Actions">{m.scope.actions.join(', ')}</Fact>
        <Fact term="Resources">
          {m.scope.resources?.length ? m.scope.resources.join(', ') : 'Any resource'}
        </Fact>
        <Fact term="Limit" testId="mandate-limit">
          {constraintsText(m.scope.constraints)}
        </Fact>
        <Fact term="Budget" testId="mandate-budget">
          {budgetText(m.scope)}
        </Fact>
        <Fact term="Valid from">{m.valid_from ? <Time iso={m.valid_from} /> : 'Its creation'}</Fact>
        <Fact term="Expires">{m.expires_at ? <Time iso={m.expires_at} /> : 'Never (until revoked)'}</Fact>
        <Fact term="Metadata">
          {Object.keys(m.metadata ?? {}).length
            ? Object.entries(m.metadata)
                .map(([k, v]) => `${k} = ${v}`)
                .join(', ')
            : 'None'}
        </Fact>
        <SignatureFacts m={m} />
      </dl>
      <VerifyShortcut mandate={m} />
    </Paper>
  );
}

/** The buttons that ask for one of the state changes the mandate's state allows. */
function LifecycleButtons({ actions, ask }: { actions: { op: Op; label: string }[]; ask: (op: Op) => void }) {
  return (
    <section className="card" aria-labelledby="lifecycle-title">
      <h2 id="lifecycle-title">Change state</h2>
      <Group gap="sm">
        {actions.map((a) => (
          <Button
            key={a.op}
            color={a.op === 'revoke' ? 'red' : a.op === 'suspend' ? 'yellow' : undefined}
            variant={a.op === 'revoke' ? 'filled' : 'light'}
            leftSection={
              a.op === 'revoke' ? (
                <Ban size={16} aria-hidden />
              ) : a.op === 'suspend' ? (
                <CirclePause size={16} aria-hidden />
              ) : (
                <CirclePlay size={16} aria-hidden />
              )
            }
            onClick={() => ask(a.op)}
          >
            {a.label}
          </Button>
        ))}
      </Group>
    </section>
  );
}

/** The form confirming one state change: a reason always, the short id typed for a revocation. */
function LifecycleForm({ op, lifecycle, short }: { op: Op; lifecycle: Lifecycle; short: string }) {
  const { reason, setReason, typed, setTyped, close, transition } = lifecycle;
  const ready = reason.trim().length > 0 && (op !== 'revoke' || typed.trim() === short);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        if (ready) transition.mutate(op);
      }}
    >
      <Text size="sm" mb="sm">
        {OP_TEXT[op].says}
      </Text>
      <Textarea
        id="lifecycle-reason"
        label="Reason"
        description="Recorded in the audit log and the evidence bundle."
        value={reason}
        maxLength={500}
        required
        autosize
        minRows={2}
        onChange={(e) => setReason(e.currentTarget.value)}
        data-autofocus
      />
      {op === 'revoke' ? (
        <TextInput
          mt="sm"
          id="revoke-confirm"
          label={`Type the mandate's short id, ${short}, to confirm`}
          value={typed}
          autoComplete="off"
          onChange={(e) => setTyped(e.currentTarget.value)}
        />
      ) : null}
      <ErrorMessage error={transition.error} />
      <Group justify="flex-end" mt="md">
        <Button variant="default" onClick={close}>
          Cancel
        </Button>
        <Button
          type="submit"
          color={op === 'revoke' ? 'red' : undefined}
          disabled={!ready}
          loading={transition.isPending}
        >
          {OP_TEXT[op].confirm}
        </Button>
      </Group>
    </form>
  );
}

/** One event of the mandate's timeline: when, what, by whom and why. */
function TimelineEvent({ e, m }: { e: AuditEvent; m: Mandate }) {
  return (
    <li>
      <Time iso={e.occurred_at} /> <strong>{e.type}</strong>{' '}
      <span className="muted">
        by {e.actor.subject_id ?? e.actor.key_id ?? e.actor.type}
        {typeof e.data.reason === 'string' && e.data.reason ? (
          e.type === 'VERIFICATION_PERFORMED' ? (
            // A decision's reason in words, compared with this mandate (docs/API.md#reasons-in-words).
            <>
              {' — '}
              {typeof e.data.decision === 'string' ? `${e.data.decision}: ` : ''}
              <ReasonWords reason={e.data.reason} request={requestOfInput(e.data.input)} mandate={m} />
            </>
          ) : (
            ` — ${e.data.reason}`
          )
        ) : (
          ''
        )}
      </span>
    </li>
  );
}

/** The audit events about the mandate, newest first as the API gives them. */
function EventTimeline({ events, m }: { events: UseQueryResult<{ data: AuditEvent[] }>; m: Mandate }) {
  return (
    <section aria-labelledby="timeline-title">
      <Title order={2} size="h4" id="timeline-title" mb="xs">
        Event timeline
      </Title>
      {events.isPending ? <Loading /> : null}
      <ErrorMessage error={events.error} />
      <ol className="timeline">
        {events.data?.data.map((e) => (
          <TimelineEvent key={e.id} e={e} m={m} />
        ))}
      </ol>
    </section>
  );
}

export function MandateDetail({ area }: { area: Area }) {
  const { id = '' } = useParams();
  const { session, canWrite, canReadEvents } = useAreaAuth(area);
  const mandate = useQuery({
    queryKey: ['mandate', id],
    queryFn: () => apiOf(session).mandates.get(id),
  });
  const events = useQuery({
    queryKey: ['mandate-events', id],
    queryFn: (): Promise<{ data: AuditEvent[] }> =>
      apiOf(session).events.list({ resource_id: id, limit: 50 }).page(),
    enabled: canReadEvents,
  });
  const lifecycle = useLifecycle(id, session);
  const { asked, close } = lifecycle;

  if (mandate.isPending) return <Loading />;
  if (mandate.error)
    return (
      <>
        <MandatePageHeader title={isNotFound(mandate.error) ? 'Mandate not found' : 'Mandate'} />
        <ErrorMessage error={mandate.error} />
      </>
    );
  const m = mandate.data;
  const actions = TRANSITIONS[m.state] ?? [];
  const short = shortId(m.id);
  return (
    <>
      <MandatePageHeader title={`Mandate ${m.id}`} />
      <MandateFacts m={m} short={short} />
      {canWrite && actions.length > 0 ? (
        <LifecycleButtons actions={actions} ask={lifecycle.setAsked} />
      ) : null}
      <Dialog opened={!!asked} onClose={close} title={asked ? OP_TEXT[asked].title : ''}>
        {asked ? <LifecycleForm op={asked} lifecycle={lifecycle} short={short} /> : null}
      </Dialog>
      <BudgetSection mandate={m} canChange={canWrite} />
      {canReadEvents ? <Evidence mandateId={m.id} /> : null}
      {canReadEvents ? <EventTimeline events={events} m={m} /> : null}
    </>
  );
}
