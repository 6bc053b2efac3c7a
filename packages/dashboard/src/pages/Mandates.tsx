import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import type { AuditEvent, Mandate } from '@mandate/client';
import { apiOf, oneOf } from '../api';
import type { Area } from '../areas';
import { useAuth } from '../auth';
import { ErrorMessage, Loading, PageHeader, SelectField, TextField, formatTime } from '../ui';
import { column } from '../table';
import { PagedTable, usePagedList } from '../paged-list';
import { Evidence } from './Evidence';

const STATES: readonly Mandate['state'][] = ['ACTIVE', 'SUSPENDED', 'REVOKED', 'EXPIRED'];

const COLUMNS = [
  column<Mandate>('Mandate', (m) => <Link to={`/mandates/${m.id}`}>{m.id}</Link>),
  column<Mandate>('Principal', (m) => m.principal.id),
  column<Mandate>('Delegate', (m) => m.delegate.id),
  column<Mandate>('Actions', (m) => m.scope.actions.join(', ')),
  column<Mandate>('State', (m) => m.state),
  column<Mandate>('Created', (m) => formatTime(m.created_at)),
];

export function MandatesPage() {
  const mandates = usePagedList<Mandate, 'state' | 'principal_id' | 'delegate_id'>({
    key: ['mandates'],
    read: (api, query) => api.mandates.list({ ...query, state: oneOf(STATES, query.state) }),
    filters: { state: '', principal_id: '', delegate_id: '' },
  });
  return (
    <>
      <PageHeader title="Mandates" />
      <div className="row">
        <SelectField id="state-filter" label="State" {...mandates.field('state')} options={STATES} any />
        <TextField id="principal-filter" label="Principal id" {...mandates.field('principal_id')} />
        <TextField id="delegate-filter" label="Delegate id" {...mandates.field('delegate_id')} />
      </div>
      <PagedTable
        list={mandates}
        caption="Mandates, newest first"
        columns={COLUMNS}
        rowKey={(m) => m.id}
        empty="No mandates."
      />
    </>
  );
}

const TRANSITIONS: Record<string, { op: 'suspend' | 'reactivate' | 'revoke'; label: string }[]> = {
  ACTIVE: [
    { op: 'suspend', label: 'Suspend' },
    { op: 'revoke', label: 'Revoke' },
  ],
  SUSPENDED: [
    { op: 'reactivate', label: 'Reactivate' },
    { op: 'revoke', label: 'Revoke' },
  ],
};

export function MandateDetail({ area }: { area: Area }) {
  const { id = '' } = useParams();
  const { session, permissions } = useAuth();
  const canWrite = !!area.write && !!permissions?.includes(area.write);
  const canReadEvents = !!permissions?.includes('events:read');
  const queryClient = useQueryClient();
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
  const [reason, setReason] = useState('');
  const transition = useMutation({
    mutationFn: (op: 'suspend' | 'reactivate' | 'revoke') =>
      apiOf(session).mandates[op](id, reason ? { reason } : {}),
    onSuccess: (m) => {
      setReason('');
      queryClient.setQueryData(['mandate', id], m);
      void queryClient.invalidateQueries({ queryKey: ['mandates'] });
      void queryClient.invalidateQueries({ queryKey: ['mandate-events', id] });
    },
  });

  if (mandate.isPending) return <Loading />;
  if (mandate.error) return <ErrorMessage error={mandate.error} />;
  const m = mandate.data;
  const actions = TRANSITIONS[m.state] ?? [];
  return (
    <>
      <PageHeader title={`Mandate ${m.id}`}>
        <Link to="/mandates">All mandates</Link>
      </PageHeader>
      <dl className="facts">
        <dt>State</dt>
        <dd data-testid="mandate-state">{m.state}</dd>
        <dt>Principal</dt>
        <dd>
          {m.principal.id} ({m.principal.type})
        </dd>
        <dt>Delegate</dt>
        <dd>
          {m.delegate.id} ({m.delegate.type})
        </dd>
        <dt>Actions</dt>
        <dd>{m.scope.actions.join(', ')}</dd>
        <dt>Constraints</dt>
        <dd>
          <code>{JSON.stringify(m.scope.constraints ?? {})}</code>
        </dd>
        <dt>Valid from</dt>
        <dd>{formatTime(m.valid_from)}</dd>
        <dt>Expires</dt>
        <dd>{formatTime(m.expires_at)}</dd>
        <dt>Version</dt>
        <dd>{m.version}</dd>
        <dt>Status list</dt>
        <dd>
          {m.status ? (
            <>
              <a href={m.status.status_list.uri}>{m.status.status_list.uri.split('/').pop()}</a>, index{' '}
              {m.status.status_list.idx}
            </>
          ) : (
            'none (verified online only)'
          )}
        </dd>
      </dl>
      {canWrite && actions.length > 0 ? (
        <section className="card" aria-labelledby="lifecycle-title">
          <h2 id="lifecycle-title">Change state</h2>
          <div className="row">
            <label htmlFor="reason">Reason</label>
            <input id="reason" value={reason} maxLength={500} onChange={(e) => setReason(e.target.value)} />
            {actions.map((a) => (
              <button
                key={a.op}
                type="button"
                className={a.op === 'revoke' ? 'danger' : undefined}
                disabled={transition.isPending}
                onClick={() => transition.mutate(a.op)}
              >
                {a.label}
              </button>
            ))}
          </div>
          <ErrorMessage error={transition.error} />
        </section>
      ) : null}
      {canReadEvents ? <Evidence mandateId={m.id} /> : null}
      {canReadEvents ? (
        <section aria-labelledby="timeline-title">
          <h2 id="timeline-title">Event timeline</h2>
          {events.isPending ? <Loading /> : null}
          <ErrorMessage error={events.error} />
          <ol className="timeline">
            {events.data?.data.map((e) => (
              <li key={e.id}>
                <time dateTime={e.occurred_at}>{formatTime(e.occurred_at)}</time> <strong>{e.type}</strong>{' '}
                <span className="muted">
                  by {e.actor.subject_id ?? e.actor.key_id ?? e.actor.type}
                  {typeof e.data.reason === 'string' && e.data.reason ? ` — ${e.data.reason}` : ''}
                </span>
              </li>
            ))}
          </ol>
        </section>
      ) : null}
    </>
  );
}
