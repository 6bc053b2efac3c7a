import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Button, Group, Text } from '@mantine/core';
import type { WebhookDelivery, WebhookEndpoint } from '@mandate/client';
import { apiOf } from '../api';
import type { Area } from '../areas';
import type { Session } from '../session';
import { useAuth } from '../auth';
import { LinkedItemPanel, useLinkedItem } from '../linked-item';
import { PagedTable, usePagedList } from '../paged-list';
import { useTenantCollection } from '../tenant-collection';
import { column } from '../table';
import { ConfirmDialog } from '../confirm';
import { DeliveryBodies, EndpointStats, EventTypePicker, ReplayFailed, SuccessRate } from './webhook-debug';
import {
  Empty,
  ErrorMessage,
  formatTime,
  FormCard,
  notifyDone,
  PageHeader,
  RowAction,
  RowActions,
  type RowOp,
  SelectField,
  StateBadge,
  Dialog,
  TextField,
  Time,
  useCreateForm,
  useSecretOnce,
} from '../ui';

type Endpoint = WebhookEndpoint;
type Delivery = WebhookDelivery;
type Attempt = Delivery['attempts'][number];

/** How one attempt ended, in a few words. */
const outcome = (a: Attempt) => a.error ?? `HTTP ${a.status_code}`;

/**
 * Webhooks: the tenant's endpoints (create with the secret shown once, rotate, enable or disable,
 * delete, send a test event), and one endpoint's deliveries with every attempt and a retry. Every
 * change is an API call the server authorizes (tenant:write); reading needs tenant:read.
 */
/** What a finished endpoint action did, as the notification says it. */
const DONE = {
  types: 'event types saved',
  rotate: 'secret rotated',
  test: 'test event sent',
  enable: 'enabled',
  disable: 'disabled',
  delete: 'deleted',
} as const;

type EndpointOp = keyof typeof DONE;

/** What an endpoint offers: a test event while enabled, a new secret, enable or disable, delete. */
const endpointOps = (e: Endpoint): RowOp<EndpointOp>[] => [
  ...(e.status === 'ENABLED' ? [{ op: 'test' as const, label: 'Send test' }] : []),
  { op: 'types', label: 'Edit event types' },
  { op: 'rotate', label: 'Rotate secret' },
  e.status === 'ENABLED' ? { op: 'disable', label: 'Disable' } : { op: 'enable', label: 'Enable' },
  { op: 'delete', label: 'Delete', danger: true },
];

type AskedChange = { endpoint: Endpoint; op: 'delete' | 'disable' };
type Linked = ReturnType<typeof useLinkedItem<Endpoint>>;

/** An endpoint's actions (EndpointOp) as one mutation, with the change awaiting confirmation and the types being edited. */
function useEndpointAction(
  session: Session | null,
  selected: Linked,
  secret: ReturnType<typeof useSecretOnce>,
) {
  const [asked, setAsked] = useState<AskedChange | null>(null);
  const [editing, setEditing] = useState<Endpoint | null>(null);
  const action = useMutation({
    mutationFn: ({ endpoint, op }: { endpoint: Endpoint; op: EndpointOp }): Promise<object> => {
      const webhooks = apiOf(session).webhooks;
      if (op === 'rotate') return webhooks.rotateWebhookSecret(endpoint.id);
      if (op === 'test') return webhooks.sendWebhookTest(endpoint.id);
      if (op === 'delete') return webhooks.deleteWebhookEndpoint(endpoint.id);
      if (op === 'types')
        return webhooks.updateWebhookEndpoint(endpoint.id, { event_types: endpoint.event_types });
      return webhooks.updateWebhookEndpoint(endpoint.id, {
        status: op === 'enable' ? 'ENABLED' : 'DISABLED',
      });
    },
    onSuccess: (res, { endpoint, op }) => {
      setAsked(null);
      setEditing(null);
      if (op === 'delete' && selected.id === endpoint.id) selected.close();
      secret.done(
        op === 'rotate' && 'secret' in res && typeof res.secret === 'string'
          ? {
              label: `New secret of ${endpoint.url} (the previous one keeps signing for 24 hours)`,
              value: res.secret,
            }
          : `${endpoint.url}: ${DONE[op]}.`,
      );
    },
  });
  return { action, asked, setAsked, editing, setEditing };
}
type EndpointAction = ReturnType<typeof useEndpointAction>;

/** Asks before an endpoint is deleted or disabled, saying what it stops. */
function ConfirmEndpointChange({ change: { action, asked, setAsked } }: { change: EndpointAction }) {
  return (
    <ConfirmDialog
      opened={!!asked}
      title={asked?.op === 'delete' ? 'Delete endpoint' : 'Disable endpoint'}
      confirm={asked?.op === 'delete' ? 'Delete endpoint' : 'Disable endpoint'}
      pending={action.isPending}
      error={asked ? action.error : null}
      onClose={() => setAsked(null)}
      onConfirm={() => asked && action.mutate(asked)}
      impact={
        !asked ? null : asked.op === 'delete' ? (
          <>
            {asked.endpoint.url} stops receiving events immediately ({asked.endpoint.event_types.join(', ')}
            ); its pending deliveries are never attempted again. This cannot be undone: adding the URL again
            gives it a new secret.
          </>
        ) : (
          <>
            {asked.endpoint.url} stops receiving events immediately: no new deliveries, and its pending ones
            end FAILED (ENDPOINT_DISABLED). Enabling it later does not send what it missed.
          </>
        )
      }
    />
  );
}

/** An endpoint's status in words, its recent success rate on its own line. */
function EndpointStatus({ e }: { e: Endpoint }) {
  return (
    <>
      {e.status === 'ENABLED'
        ? e.failing_since
          ? `enabled, failing since ${formatTime(e.failing_since)}`
          : 'enabled'
        : `disabled (${e.disabled_reason ?? 'manual'})`}
      {/* Its own line, so the table stays as wide as before (docs/DASHBOARD.md, "Design system"). */}
      <SuccessRate endpointId={e.id} />
    </>
  );
}

/** The endpoints table's columns; its actions open the deliveries and, for a writer, change the endpoint. */
function endpointColumns(
  canWrite: boolean,
  selected: Linked,
  { action, setAsked, setEditing }: EndpointAction,
) {
  return [
    column<Endpoint>('URL', (e) => <code className="url">{e.url}</code>),
    column<Endpoint>('Events', (e) => e.event_types.join(', ')),
    column<Endpoint>('Status', (e) => <EndpointStatus e={e} />),
    column<Endpoint>('Created', (e) => <Time iso={e.created_at} />, 'nowrap'),
    column<Endpoint>(
      'Actions',
      (e) => (
        <Group gap="xs">
          <Button size="xs" variant="default" onClick={() => selected.open(e.id)}>
            Deliveries <span className="sr-only">{e.url}</span>
          </Button>
          {canWrite ? (
            <>
              <RowActions
                subject={e.url}
                ops={endpointOps(e)}
                busy={action.isPending}
                onAction={(op) => {
                  action.reset();
                  if (op === 'delete' || op === 'disable') setAsked({ endpoint: e, op });
                  else if (op === 'types') setEditing(e);
                  else action.mutate({ endpoint: e, op });
                }}
              />
            </>
          ) : null}
        </Group>
      ),
      'actions',
    ),
  ];
}

export function WebhooksPage({ area }: { area: Area }) {
  const {
    session,
    tenantId,
    canWrite,
    list: endpoints,
    refresh,
  } = useTenantCollection<Endpoint>('webhook-endpoints', area, (api, _tenantId, query) =>
    api.webhooks.listWebhookEndpoints(query),
  );
  const secret = useSecretOnce(refresh);
  // The endpoint whose deliveries show, in the URL (`?endpoint=whe_…`): a reload keeps it open and its
  // deliveries' filter, and the header's "Go to id" opens it (docs/DASHBOARD.md, "Search").
  const selected = useLinkedItem('endpoint', (api, id) => api.webhooks.getWebhookEndpoint(id));
  const change = useEndpointAction(session, selected, secret);
  const { action, asked, editing, setEditing } = change;

  return (
    <>
      <PageHeader title="Webhooks" />
      {secret.view}
      {canWrite ? (
        <CreateEndpoint
          onCreated={(e) => secret.done({ label: `Signing secret of ${e.url}`, value: e.secret })}
        />
      ) : (
        // The API leaves the query string out for read-only roles (docs/WEBHOOKS.md#who-sees-the-url).
        <Text size="sm" c="dimmed" data-testid="url-redacted">
          URLs are shown without their query string, which may hold a secret.
        </Text>
      )}
      {asked ? null : <ErrorMessage error={action.error} />}
      <ConfirmEndpointChange change={change} />
      <PagedTable
        list={endpoints}
        caption={`Webhook endpoints of tenant ${tenantId}`}
        empty={
          <Empty title="No endpoints." call="POST /v1/webhook-endpoints">
            Add one above: signed events (a mandate revoked, a key rotated…) then reach your HTTPS URL within
            seconds.
          </Empty>
        }
        rowKey={(e) => e.id}
        columns={endpointColumns(canWrite, selected, change)}
      />
      {editing ? (
        <EditEventTypes
          endpoint={editing}
          pending={action.isPending}
          error={action.error}
          onClose={() => setEditing(null)}
          onSave={(types) => action.mutate({ endpoint: { ...editing, event_types: types }, op: 'types' })}
        />
      ) : null}
      <LinkedItemPanel linked={selected} label="Webhook endpoint">
        {(e) => <Deliveries endpoint={e} canWrite={canWrite} />}
      </LinkedItemPanel>
    </>
  );
}

/** The picker's choice as the form keeps it: the types, comma-separated (`*` for all). */
const typesOf = (value: string) => value.split(',').filter(Boolean);

function CreateEndpoint({ onCreated }: { onCreated(e: Endpoint & { secret: string }): void }) {
  const { field, create, submit } = useCreateForm({
    initial: { url: '', types: '*' },
    clear: ['url'],
    send: (api, { url, types }) =>
      api.webhooks.createWebhookEndpoint({ url: url.trim(), event_types: typesOf(types) }),
    onCreated,
  });
  const types = field('types');
  return (
    <FormCard id="create-webhook-title" title="Add an endpoint" onSubmit={submit}>
      <div className="row">
        <TextField
          id="webhook-url"
          label="URL (https)"
          {...field('url')}
          required
          placeholder="https://hooks.example.com/mandates"
        />
      </div>
      <EventTypePicker value={typesOf(types.value)} onChange={(t) => types.onChange(t.join(','))} />
      <Button type="submit" loading={create.isPending}>
        Add endpoint
      </Button>
      <ErrorMessage error={create.error} />
    </FormCard>
  );
}

/** Changes an endpoint's event types with the same picker as the creation form. */
function EditEventTypes({
  endpoint,
  pending,
  error,
  onClose,
  onSave,
}: {
  endpoint: Endpoint;
  pending: boolean;
  error: unknown;
  onClose(): void;
  onSave(types: string[]): void;
}) {
  const [types, setTypes] = useState(endpoint.event_types);
  return (
    <Dialog opened onClose={onClose} title={`Event types of ${endpoint.url}`} size="lg">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          onSave(types);
        }}
      >
        <EventTypePicker value={types} onChange={setTypes} />
        <ErrorMessage error={error} />
        <Group justify="flex-end" mt="md">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button type="submit" loading={pending} disabled={types.length === 0}>
            Save event types
          </Button>
        </Group>
      </form>
    </Dialog>
  );
}

/** Retries one delivery now; the endpoints are read again, since a success clears "failing since". */
function useRetry(endpoint: Endpoint) {
  const { session } = useAuth();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (d: Delivery) => apiOf(session).webhooks.retryWebhookDelivery(endpoint.id, d.id),
    onSuccess: () => {
      notifyDone('Delivery retried: the attempt is listed.');
      // The endpoints too: a success clears the endpoint's "failing since" (docs/WEBHOOKS.md, "Debugging a receiver").
      void queryClient.invalidateQueries({ queryKey: ['webhook-endpoints'] });
    },
  });
}

/** A delivery's attempts, each with when, how it ended and how long it took, and its bodies. */
function Attempts({ d }: { d: Delivery }) {
  return (
    <>
      <ol className="attempts">
        {d.attempts.map((a) => (
          <li key={a.attempted_at + a.duration_ms}>
            {formatTime(a.attempted_at)}: {outcome(a)} ({a.duration_ms} ms{a.manual ? ', manual' : ''})
          </li>
        ))}
      </ol>
      <DeliveryBodies delivery={d} />
    </>
  );
}

/** The deliveries table's columns; a writer's last one retries a delivery. */
function deliveryColumns(canWrite: boolean, retry: ReturnType<typeof useRetry>) {
  return [
    // When the delivery was made (its event arrived): the order the API pages in, turned by its header.
    column<Delivery>('Created', (d) => <Time iso={d.created_at} hint={false} />, {
      className: 'nowrap',
      sortable: true,
    }),
    column<Delivery>('Event', (d) => (
      <>
        {d.event_type} <code>{d.event_id}</code>
      </>
    )),
    column<Delivery>('Status', (d) => <StateBadge state={d.status} />),
    column<Delivery>('Attempts', (d) => <Attempts d={d} />),
    column<Delivery>('Next attempt', (d) => <Time iso={d.next_attempt_at} />, 'nowrap'),
    ...(canWrite
      ? [
          column<Delivery>(
            'Actions',
            (d) => (
              <RowAction subject={d.event_id} loading={retry.isPending} onClick={() => retry.mutate(d)}>
                Retry
              </RowAction>
            ),
            'actions',
          ),
        ]
      : []),
  ];
}

function Deliveries({ endpoint, canWrite }: { endpoint: Endpoint; canWrite: boolean }) {
  const deliveries = usePagedList<Delivery, 'status'>({
    key: ['webhook-endpoints', 'deliveries', endpoint.id],
    read: (api, query) =>
      api.webhooks.listWebhookDeliveries(endpoint.id, {
        ...query,
        status: (query.status || undefined) as Delivery['status'] | undefined,
      }),
    filters: { status: '' },
    ordered: true,
  });
  const retry = useRetry(endpoint);
  return (
    <section className="card" aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries to {endpoint.url}</h2>
      <EndpointStats endpointId={endpoint.id} />
      {canWrite && endpoint.status === 'ENABLED' ? <ReplayFailed endpoint={endpoint} /> : null}
      <div className="row">
        <SelectField
          id="delivery-status"
          label="Status"
          {...deliveries.field('status')}
          options={['PENDING', 'SUCCEEDED', 'FAILED']}
          any
        />
      </div>
      <ErrorMessage error={retry.error} />
      <PagedTable
        list={deliveries}
        caption={deliveries.order === 'asc' ? 'Deliveries, oldest first' : 'Deliveries, newest first'}
        empty={
          <Empty title="No deliveries yet." call="POST /v1/webhook-endpoints/:id/test">
            Send a test event, or wait for an event of the types this endpoint takes.
          </Empty>
        }
        rowKey={(d) => d.id}
        columns={deliveryColumns(canWrite, retry)}
      />
    </section>
  );
}
