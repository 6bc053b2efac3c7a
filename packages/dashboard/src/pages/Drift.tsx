import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Button, Group, Text } from '@mantine/core';
import { EVENT_TYPES, type AuditEvent } from '@mandate/client';
import { allPages, apiOf } from '../api';
import type { Area } from '../areas';
import { useAreaAuth } from '../auth';
import type { Session } from '../session';
import {
  accessDiff,
  type AccessSnapshot,
  type AssignmentEntry,
  type KeyEntry,
  type Difference,
} from '../drift';
import { ErrorMessage, formatTime, IdToken, Loaded, Loading, notifyDone, PageHeader, Time } from '../ui';
import { DataTable, column } from '../table';

/**
 * The audit trail's access-configuration changes (docs/DASHBOARD.md): keys and their scopes, role
 * assignments, widget origins.
 */
export const ACCESS_EVENT_TYPES = EVENT_TYPES.filter(
  (t) => t.startsWith('API_KEY_') || t.startsWith('TENANT_ROLE_') || t === 'WIDGET_CONFIG_UPDATED',
);

interface Actor {
  type: string;
  key_id?: string;
  subject_id?: string;
}

const actorText = (a: Actor | null | undefined) =>
  !a
    ? '—'
    : a.type === 'api_key'
      ? `API key ${a.key_id ?? ''}`
      : a.type === 'user'
        ? (a.subject_id ?? 'a user')
        : a.type === 'operator'
          ? 'the platform operator'
          : a.type;

/** Who made an access change, in a table cell: a key by its id shortened (with a copy button). */
function ActorCell({ actor: a }: { actor: Actor | null | undefined }) {
  if (!a) return '—';
  if (a.type === 'api_key' && a.key_id)
    return (
      <span className="nowrap">
        API key <IdToken id={a.key_id} />
      </span>
    );
  return actorText(a);
}

const DIFFERENCE_COLUMNS = [
  column<Difference>('What', (d) => d.kind),
  column<Difference>('Change', (d) => d.change),
  column<Difference>('Which', (d) => d.what),
  column<Difference>('Detail', (d) => d.detail),
];

const EVENT_COLUMNS = [
  column<AuditEvent>('Time', (e) => <Time iso={e.occurred_at} />),
  column<AuditEvent>('Event', (e) => e.type),
  // Ids shortened, as everywhere: the full ones made this table scroll inside itself at 1280 px.
  column<AuditEvent>('Resource', (e) =>
    e.resource ? (
      <span className="nowrap">
        {e.resource.type} <IdToken id={e.resource.id} />
      </span>
    ) : (
      '—'
    ),
  ),
  column<AuditEvent>('By', (e) => <ActorCell actor={e.actor} />),
];

/** The tenant's access configuration now, read through the same lists the other areas use. */
async function currentAccess(session: Session | null, tenantId: string): Promise<AccessSnapshot> {
  const api = apiOf(session);
  const [keys, assignments, widget] = await Promise.all([
    allPages<KeyEntry>((query) => api.apiKeys.list(tenantId, query)),
    allPages<AssignmentEntry>((query) => api.roleAssignments.list(tenantId, query)),
    api.widgetConfig.get(tenantId),
  ]);
  return {
    api_keys: keys.items,
    role_assignments: assignments.items,
    widget_allowed_origins: widget.allowed_origins,
    truncated: keys.truncated || assignments.truncated,
  };
}

/** The saved baseline (and saving it again), the configuration now and the access events since. */
function useDrift(session: Session | null, tenantId: string, canEvents: boolean) {
  const queryClient = useQueryClient();
  const baseline = useQuery({
    queryKey: ['access-baseline', tenantId],
    queryFn: () => apiOf(session).tenants.getAccessBaseline(tenantId),
  });
  const save = useMutation({
    mutationFn: () => apiOf(session).tenants.putAccessBaseline(tenantId, {}),
    onSuccess: (saved) => {
      queryClient.setQueryData(['access-baseline', tenantId], saved);
      notifyDone('Baseline saved: later changes show against it.');
      void queryClient.invalidateQueries({ queryKey: ['drift'] });
    },
  });
  const savedAt = baseline.data?.saved_at ?? null;
  const snapshot = baseline.data?.snapshot ?? null;
  const current = useQuery({
    queryKey: ['drift', 'current', tenantId, savedAt],
    queryFn: () => currentAccess(session, tenantId),
    enabled: !!snapshot,
  });
  const events = useQuery({
    queryKey: ['drift', 'events', tenantId, savedAt],
    queryFn: () =>
      allPages<AuditEvent>(
        (query) =>
          apiOf(session).events.list({ type: ACCESS_EVENT_TYPES.join(','), since: savedAt!, ...query }),
        5,
      ),
    enabled: canEvents && !!savedAt,
  });
  return { baseline, save, savedAt, snapshot, current, events };
}
type Drift = ReturnType<typeof useDrift>;

/** When the baseline was saved, by whom and what it holds, and the button that saves it (again). */
function BaselineSection({
  drift: { baseline, save, savedAt, snapshot },
  canWrite,
}: {
  drift: Drift;
  canWrite: boolean;
}) {
  return (
    <section className="card" aria-labelledby="baseline-title">
      <h2 id="baseline-title">Baseline</h2>
      <Loaded query={baseline}>
        {(saved) =>
          savedAt && snapshot ? (
            <p data-testid="baseline-saved">
              Saved {formatTime(savedAt)} by {actorText(saved.saved_by)}: {snapshot.api_keys.length} API keys,{' '}
              {snapshot.role_assignments.length} role assignments, {snapshot.widget_allowed_origins.length}{' '}
              widget origins
              {snapshot.truncated ? ' (more than a snapshot holds: the newest 1000 of each)' : ''}.
            </p>
          ) : (
            <p data-testid="baseline-none">
              No baseline saved yet. Saving one records the API keys, their scopes, the role assignments and
              the widget origins as they are now; this page then shows what changed since.
            </p>
          )
        }
      </Loaded>
      <Group gap="sm" mb="sm">
        <Button
          disabled={!canWrite || save.isPending || !baseline.data}
          loading={save.isPending}
          onClick={() => save.mutate()}
        >
          Save baseline
        </Button>
        {!canWrite ? (
          <Text size="sm" c="dimmed">
            Saving a baseline needs the tenant:write permission, which your role lacks.
          </Text>
        ) : savedAt ? (
          <Text size="sm" c="dimmed">
            Saving again replaces the baseline with the configuration as it is now.
          </Text>
        ) : null}
      </Group>
      <ErrorMessage error={save.error} />
    </section>
  );
}

/** What differs now from the baseline's snapshot. */
function DifferencesSection({ drift: { current, snapshot, savedAt } }: { drift: Drift }) {
  const differences = snapshot && current.data ? accessDiff(snapshot, current.data) : null;
  return (
    <section className="card" aria-labelledby="diff-title">
      <h2 id="diff-title">Current configuration against the baseline</h2>
      {current.isPending ? <Loading /> : null}
      <ErrorMessage error={current.error} />
      {differences ? (
        differences.length === 0 ? (
          <p data-testid="no-differences">The access configuration is the same as at the baseline.</p>
        ) : (
          <DataTable
            testId="differences"
            caption={`What differs now from the baseline of ${formatTime(savedAt)}`}
            columns={DIFFERENCE_COLUMNS}
            rows={differences}
            rowKey={(d) => `${d.kind} ${d.change} ${d.what}`}
            rowProps={(d) => ({ 'data-kind': d.kind, 'data-change': d.change })}
          />
        )
      ) : null}
      {current.data?.truncated ? (
        <p className="muted">More than 2000 keys or assignments: only the newest were compared.</p>
      ) : null}
    </section>
  );
}

/** Each access change the audit trail recorded since the baseline (needs events:read). */
function TrailSection({ drift: { events, savedAt }, canEvents }: { drift: Drift; canEvents: boolean }) {
  return (
    <section className="card" aria-labelledby="trail-title">
      <h2 id="trail-title">Changes in the audit trail since the baseline</h2>
      {!canEvents ? (
        <p data-testid="trail-unavailable">
          The audit trail needs the events:read permission, which your role lacks. The comparison above shows
          what differs now, not each change made in between (a key created and revoked again does not show
          there).
        </p>
      ) : (
        <>
          <Loaded query={events}>
            {({ items }) =>
              items.length === 0 ? (
                <p data-testid="no-events">
                  No access change recorded since the baseline. Events reach the audit trail through the
                  broker, a moment after the change.
                </p>
              ) : (
                <DataTable
                  testId="trail"
                  caption={`Access events since ${formatTime(savedAt)}, newest first`}
                  columns={EVENT_COLUMNS}
                  rows={items}
                  rowKey={(e) => e.id}
                  rowProps={(e) => ({ 'data-type': e.type })}
                />
              )
            }
          </Loaded>
          {events.data?.truncated ? (
            <p className="muted">Only the newest 500 events are shown; the Audit log pages through all.</p>
          ) : null}
        </>
      )}
    </section>
  );
}

/**
 * Drift monitoring: the baseline (when, by whom), the current configuration compared with its
 * snapshot (any reader of the tenant: tenant:read), and each access change the audit trail
 * recorded since (only with events:read; without it the page says so and shows the comparison).
 */
export function DriftPage({ area }: { area: Area }) {
  const { session, tenantId, canWrite, canReadEvents: canEvents } = useAreaAuth(area);
  const drift = useDrift(session, tenantId, canEvents);
  return (
    <>
      <PageHeader title="Drift monitoring" />
      <BaselineSection drift={drift} canWrite={canWrite} />
      {drift.snapshot ? <DifferencesSection drift={drift} /> : null}
      {drift.snapshot ? <TrailSection drift={drift} canEvents={canEvents} /> : null}
    </>
  );
}
