import { useState } from 'react';
import { ActionIcon, Badge, Checkbox, Code, Group, Text } from '@mantine/core';
import { PanelRightOpen } from 'lucide-react';
import { EVENT_TYPES, type AuditEvent } from '@mandate/client';
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
  localTimeToIso,
  Fact,
} from '../ui';
import { column } from '../table';
import { PagedTable, usePagedList } from '../paged-list';
import { isNotFound, useLinkedItem } from '../linked-item';
import { AuditCheckpoints } from './AuditCheckpoints';
import { ReasonWords, requestOfInput } from '../reasons';

/** A string or number member of an event's data (no contract types `data` per event type). */
const text = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;

/** An HTTP status as a badge: 2xx green, 4xx amber, 5xx red. */
function HttpStatus({ status }: { status: unknown }) {
  const n = typeof status === 'number' ? status : Number(status);
  const color = n >= 500 ? 'red' : n >= 400 ? 'yellow' : 'green';
  return (
    <Badge color={color} variant="light" radius="sm">
      {String(status)}
    </Badge>
  );
}

/** What an event says: an API call's method, route and status on one line; a decision and its reason in words; a reason. */
function Summary({ e }: { e: AuditEvent }) {
  const d = e.data;
  if (e.type === 'API_CALL')
    return (
      <Group gap={6} wrap="nowrap">
        <Code>{text(d.method)}</Code>
        <span className="ellipsis" title={text(d.route)}>
          {text(d.route)}
        </span>
        <HttpStatus status={d.status} />
      </Group>
    );
  if (e.type === 'VERIFICATION_PERFORMED') {
    const reason = text(d.reason);
    const request = requestOfInput(d.input);
    // The reason whole, in words (docs/API.md#reasons-in-words): it wraps, never cut to "A…".
    return (
      <Group gap={6} wrap="nowrap" align="flex-start">
        <StateBadge state={text(d.decision) ?? '—'} />
        <span className="summary-text">
          {request?.action}
          {reason ? (
            <>
              {' · '}
              <ReasonWords reason={reason} request={request} mandateId={e.resource?.id} />
            </>
          ) : null}
        </span>
      </Group>
    );
  }
  const reason = text(d.reason);
  // A lifecycle's reason is someone's words: shown whole, wrapped; a name or URL is cut, its whole the title.
  if (reason) return <span className="summary-text">Reason: {reason}</span>;
  const named = text(d.name) ?? text(d.url) ?? '';
  return (
    <span className="ellipsis" title={named}>
      {named}
    </span>
  );
}

const actorOf = (e: AuditEvent) => e.actor.key_id ?? e.actor.subject_id;

type Filter = 'type' | 'resource_id' | 'key_id' | 'since' | 'until' | 'exclude_dashboard_reads';

/** The log's columns; the last opens the event's drawer. */
function auditColumns(open: (e: AuditEvent) => void) {
  return [
    // One line an event: the relative time is the time's title here (and in the event's drawer).
    // Sorted as the API pages (by id, the order events were recorded): the header turns the whole log around.
    column<AuditEvent>('Time (UTC)', (e) => <Time iso={e.occurred_at} hint={false} zone={false} />, {
      className: 'nowrap',
      sortable: true,
    }),
    column<AuditEvent>('Type', (e) => <span className="nowrap event-type">{e.type}</span>),
    column<AuditEvent>('Actor', (e) => {
      const actor = actorOf(e);
      return actor ? <IdToken id={actor} /> : e.actor.type;
    }),
    column<AuditEvent>('Resource', (e) => (e.resource ? <IdToken id={e.resource.id} /> : '—')),
    column<AuditEvent>('Summary', (e) => <Summary e={e} />, 'summary'),
    column<AuditEvent>('View', (e) => (
      <ActionIcon variant="subtle" aria-label={`Details of event ${e.id}`} onClick={() => open(e)}>
        <PanelRightOpen size={18} aria-hidden />
      </ActionIcon>
    )),
  ];
}

/** The log's filters, in the URL: type, resource, key, time window and the dashboard's own reads. */
function AuditFilters({ field }: { field: ReturnType<typeof useAuditEvents>['field'] }) {
  return (
    <>
      <div className="row">
        <SelectField id="type-filter" label="Event type" {...field('type')} options={EVENT_TYPES} any />
        <TextField id="resource-filter" label="Resource id" {...field('resource_id')} />
        <TextField id="key-filter" label="Key id" {...field('key_id')} />
        <TextField id="since-filter" label="From (UTC)" type="datetime-local" {...field('since')} />
        <TextField id="until-filter" label="Until (UTC)" type="datetime-local" {...field('until')} />
      </div>
      <DashboardReadsToggle {...field('exclude_dashboard_reads')} />
    </>
  );
}

/** The tenant's events, a page at a time, as the filters ask. */
function useAuditEvents() {
  return usePagedList<AuditEvent, Filter>({
    key: ['events'],
    // Every page view adds the dashboard's own reads (this list's included): hidden unless asked for
    // (docs/DASHBOARD.md, "Areas"). Only `false` shows them, so a mistyped URL still hides them.
    read: (api, { exclude_dashboard_reads: exclude, ...query }) =>
      api.events.list({ ...query, exclude_dashboard_reads: exclude === 'false' ? 'false' : 'true' }),
    filters: { type: '', resource_id: '', key_id: '', since: '', until: '', exclude_dashboard_reads: 'true' },
    toParams: (f) => ({ ...f, since: localTimeToIso(f.since), until: localTimeToIso(f.until) }),
    limit: 25,
    ordered: true,
  });
}

export function AuditPage() {
  const [open, setOpen] = useState<AuditEvent | null>(null);
  const events = useAuditEvents();
  return (
    <>
      <PageHeader
        title="Audit log"
        description="Every change, verification and API call of this tenant, newest first. Times are UTC."
      />
      <AuditFilters field={events.field} />
      <PagedTable
        list={events}
        csv="audit-events"
        testId="events"
        caption={events.order === 'asc' ? 'Events, oldest first' : 'Events, newest first'}
        columns={auditColumns(setOpen)}
        rowKey={(e) => e.id}
        rowProps={(e) => ({ 'data-event': e.id })}
        empty={
          <Empty title="No events." call="GET /v1/events?exclude_dashboard_reads=true&type=…&since=…">
            Nothing matches these filters: widen the time window or clear a filter. Every API call, change and
            verification of this tenant lands here within seconds.
          </Empty>
        }
      />
      <AuditCheckpoints />
      <Dialog drawer opened={!!open} onClose={() => setOpen(null)} size="lg" title={open ? open.type : ''}>
        {open ? <EventDetail e={open} /> : null}
      </Dialog>
      <LinkedEvent />
    </>
  );
}

/**
 * The event the URL names (`?event=evt_…`, the header's "Go to id"), in the same drawer as a row's;
 * closing it takes the id out of the URL. An id this tenant has not is said in the drawer.
 */
function LinkedEvent() {
  const linked = useLinkedItem('event', (api, id) => api.events.get(id));
  const e = linked.query.data;
  return (
    <Dialog drawer opened={linked.id !== null} onClose={linked.close} size="lg" title={e ? e.type : 'Event'}>
      {linked.query.isPending ? <Loading /> : null}
      {isNotFound(linked.query.error) ? (
        <Text role="alert">
          This tenant has no event <code>{linked.id}</code>.
        </Text>
      ) : (
        <ErrorMessage error={linked.query.error} />
      )}
      {e ? <EventDetail e={e} /> : null}
    </Dialog>
  );
}

/** The filter `exclude_dashboard_reads` as a checkbox that shows them: ticked is `false`. */
function DashboardReadsToggle({ value, onChange }: { value: string; onChange(value: string): void }) {
  return (
    <Checkbox
      id="dashboard-reads-filter"
      label="Show the dashboard's own reads"
      description="What people signed in here only looked at (GET calls through the dashboard, this page's own included)"
      checked={value === 'false'}
      onChange={(e) => onChange(e.currentTarget.checked ? 'false' : 'true')}
      mb="md"
    />
  );
}

/** Who acted: the actor's type, and its key or subject when it has one. */
function ActorFacts({ e }: { e: AuditEvent }) {
  return (
    <>
      <Fact term="Actor">{e.actor.type}</Fact>
      {e.actor.key_id ? (
        <Fact term="Key id">
          <IdToken id={e.actor.key_id} full />
        </Fact>
      ) : null}
      {e.actor.subject_id ? (
        <Fact term="Subject">
          <code>{e.actor.subject_id}</code>
        </Fact>
      ) : null}
    </>
  );
}

/** An API call's method, route, path, status and duration. */
function ApiCallFacts({ d }: { d: AuditEvent['data'] }) {
  return (
    <>
      <Fact term="Method" testId="detail-method">
        {text(d.method)}
      </Fact>
      <Fact term="Route" testId="detail-route">
        <code>{text(d.route)}</code>
      </Fact>
      <Fact term="Path">
        <code>{text(d.path)}</code>
      </Fact>
      <Fact term="Status" testId="detail-status">
        <HttpStatus status={d.status} />
      </Fact>
      <Fact term="Duration" testId="detail-duration">
        {text(d.duration_ms)} ms
      </Fact>
    </>
  );
}

/** Everything an event holds: who, when, which request, what on; an API call's method, route, status and duration; then its data as sent. */
function EventDetail({ e }: { e: AuditEvent }) {
  return (
    <div data-testid="event-detail">
      <dl className="facts">
        <Fact term="Event id">
          <IdToken id={e.id} full />
        </Fact>
        <Fact term="Type">{e.type}</Fact>
        <Fact term="Occurred">
          <Time iso={e.occurred_at} />
        </Fact>
        <ActorFacts e={e} />
        <Fact term="Request id" testId="detail-request-id">
          {e.request_id ? <IdToken id={e.request_id} full /> : '—'}
        </Fact>
        <Fact term="Resource">
          {e.resource ? (
            <>
              {e.resource.type} <IdToken id={e.resource.id} full />
            </>
          ) : (
            '—'
          )}
        </Fact>
        {e.type === 'API_CALL' ? <ApiCallFacts d={e.data} /> : null}
        {e.trace_id ? (
          <Fact term="Trace">
            <code>{e.trace_id}</code>
          </Fact>
        ) : null}
      </dl>
      <Text fw={600} mt="md" mb={4}>
        Data
      </Text>
      <pre className="snippet" data-testid="detail-data">
        {JSON.stringify(e.data, null, 2)}
      </pre>
    </div>
  );
}
