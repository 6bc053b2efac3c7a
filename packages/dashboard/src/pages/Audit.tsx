import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { EVENT_TYPES } from '@mandate/shared';
import { call, qs, type Page } from '../api';
import { useAuth } from '../auth';
import {
  ErrorMessage,
  FilterInput,
  FilterSelect,
  Loading,
  PageHeader,
  formatTime,
  localTimeToIso,
  usePager,
} from '../ui';
import { DataTable, column } from '../table';

interface AuditEvent {
  id: string;
  type: string;
  occurred_at: string;
  actor: { type: string; key_id?: string; subject_id?: string };
  resource: { type: string; id: string } | null;
}

const COLUMNS = [
  column<AuditEvent>('Time', (e) => formatTime(e.occurred_at), 'nowrap'),
  column<AuditEvent>('Type', (e) => e.type),
  column<AuditEvent>('Actor', (e) => e.actor.subject_id ?? e.actor.key_id ?? e.actor.type),
  column<AuditEvent>('Resource', (e) => (e.resource ? `${e.resource.type} ${e.resource.id}` : '—')),
  column<AuditEvent>('Event id', (e) => <code>{e.id}</code>, 'id'),
];

export function AuditPage() {
  const { session } = useAuth();
  const [type, setType] = useState('');
  const [resource, setResource] = useState('');
  const [key, setKey] = useState('');
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const pager = usePager();
  const filters = {
    type,
    resource_id: resource.trim(),
    key_id: key.trim(),
    since: localTimeToIso(since),
    until: localTimeToIso(until),
  };
  const events = useQuery({
    queryKey: ['events', filters, pager.cursor],
    queryFn: () =>
      call<Page<AuditEvent>>(
        session,
        'GET',
        '/v1/events' + qs({ ...filters, cursor: pager.cursor, limit: '25' }),
      ),
  });
  return (
    <>
      <PageHeader title="Audit log" />
      <div className="row">
        <FilterSelect
          id="type-filter"
          label="Event type"
          value={type}
          onChange={setType}
          options={EVENT_TYPES}
          any
          pager={pager}
        />
        <FilterInput
          id="resource-filter"
          label="Resource id"
          value={resource}
          onChange={setResource}
          pager={pager}
        />
        <FilterInput id="key-filter" label="Key id" value={key} onChange={setKey} pager={pager} />
      </div>
      <div className="row">
        <FilterInput
          id="since-filter"
          label="From"
          type="datetime-local"
          value={since}
          onChange={setSince}
          pager={pager}
        />
        <FilterInput
          id="until-filter"
          label="Until"
          type="datetime-local"
          value={until}
          onChange={setUntil}
          pager={pager}
        />
      </div>
      {events.isPending ? <Loading /> : null}
      <ErrorMessage error={events.error} />
      {events.data ? (
        <DataTable
          caption="Events, newest first"
          columns={COLUMNS}
          rows={events.data.data}
          rowKey={(e) => e.id}
          empty="No events."
          pager={{ pager, nextCursor: events.data.next_cursor }}
        />
      ) : null}
    </>
  );
}
