import type { AuditEvent } from '@mandate/client';
import { EVENT_TYPES } from '@mandate/shared';
import { PageHeader, SelectField, TextField, formatTime, localTimeToIso } from '../ui';
import { column } from '../table';
import { PagedTable, usePagedList } from '../paged-list';

const COLUMNS = [
  column<AuditEvent>('Time', (e) => formatTime(e.occurred_at), 'nowrap'),
  column<AuditEvent>('Type', (e) => e.type),
  column<AuditEvent>('Actor', (e) => e.actor.subject_id ?? e.actor.key_id ?? e.actor.type),
  column<AuditEvent>('Resource', (e) => (e.resource ? `${e.resource.type} ${e.resource.id}` : '—')),
  column<AuditEvent>('Event id', (e) => <code>{e.id}</code>, 'id'),
];

export function AuditPage() {
  const events = usePagedList<AuditEvent, 'type' | 'resource_id' | 'key_id' | 'since' | 'until'>({
    key: ['events'],
    read: (api, query) => api.events.list(query),
    filters: { type: '', resource_id: '', key_id: '', since: '', until: '' },
    toParams: (f) => ({ ...f, since: localTimeToIso(f.since), until: localTimeToIso(f.until) }),
    limit: 25,
  });
  return (
    <>
      <PageHeader title="Audit log" />
      <div className="row">
        <SelectField
          id="type-filter"
          label="Event type"
          {...events.field('type')}
          options={EVENT_TYPES}
          any
        />
        <TextField id="resource-filter" label="Resource id" {...events.field('resource_id')} />
        <TextField id="key-filter" label="Key id" {...events.field('key_id')} />
      </div>
      <div className="row">
        <TextField id="since-filter" label="From" type="datetime-local" {...events.field('since')} />
        <TextField id="until-filter" label="Until" type="datetime-local" {...events.field('until')} />
      </div>
      <PagedTable
        list={events}
        caption="Events, newest first"
        columns={COLUMNS}
        rowKey={(e) => e.id}
        empty="No events."
      />
    </>
  );
}
