import type { ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Badge } from '@mantine/core';
import {
  MANDATE_STATES as STATES,
  type ApiKey,
  type Mandate,
  type RoleAssignment as Assignment,
} from '@mandate/client';
import { allPages, apiOf } from '../api';
import { useAuth } from '../auth';
import { BarChart } from '../chart';
import { Empty, ErrorMessage, IdToken, Loading, PageHeader, StateBadge, Time } from '../ui';
import { DataTable, column, type ColumnDef } from '../table';

const DAY = 86_400_000;

/** An active key not used for 30 days: its last use, or its creation when never used, is older. */
export const unusedFor30Days = (k: ApiKey, now: number) =>
  k.status !== 'revoked' && now - Date.parse(k.last_used_at ?? k.created_at) > 30 * DAY;

export const expiringWithin7Days = (m: Mandate, now: number) =>
  m.state === 'ACTIVE' &&
  !!m.expires_at &&
  Date.parse(m.expires_at) > now &&
  Date.parse(m.expires_at) - now <= 7 * DAY;

const MANDATE_COLUMNS = [
  column<Mandate>('Mandate', (m) => <IdToken id={m.id} to={`/mandates/${m.id}`} />),
  column<Mandate>('Principal', (m) => m.principal.id),
  column<Mandate>('Delegate', (m) => m.delegate.id),
  column<Mandate>('Expires', (m) => <Time iso={m.expires_at} />),
];
const KEY_COLUMNS = [
  column<ApiKey>('Key', (k) => <IdToken id={k.key_id} />),
  column<ApiKey>('Name', (k) => k.name),
  column<ApiKey>('Status', (k) => <StateBadge state={k.status} />),
  column<ApiKey>('Last used', (k) => (k.last_used_at ? <Time iso={k.last_used_at} /> : 'Never')),
];
const ROLE_COLUMNS = [
  column<Assignment>('Subject', (a) => a.subject_id),
  column<Assignment>('Roles', (a) => a.roles.join(', ')),
  column<Assignment>('Since', (a) => <Time iso={a.updated_at} />),
];

/** The active mandates that expire within 7 days, soonest first. */
function ExpiringMandates({ mandates, now }: { mandates: Mandate[]; now: number }) {
  return (
    <Listing
      id="gov-expiring"
      title="Expiring within 7 days"
      empty={
        <Empty title="No active mandate expires within 7 days." call="GET /v1/mandates?state=ACTIVE">
          Nothing to renew this week.
        </Empty>
      }
      columns={MANDATE_COLUMNS}
      rows={mandates
        .filter((m) => expiringWithin7Days(m, now))
        .sort((a, b) => Date.parse(a.expires_at!) - Date.parse(b.expires_at!))}
      rowKey={(m) => m.id}
    />
  );
}

/** The keys to look at: unused for 30 days, and those holding tenants:admin. */
function KeyListings({ keys, now }: { keys: ApiKey[]; now: number }) {
  return (
    <>
      <Listing
        id="gov-unused"
        title="API keys unused for 30 days"
        empty={
          <Empty
            title="Every active key was used (or created) within the last 30 days."
            call="GET /v1/tenants/:id/api-keys"
          >
            Nothing to clean up.
          </Empty>
        }
        columns={KEY_COLUMNS}
        rows={keys.filter((k) => unusedFor30Days(k, now))}
        rowKey={(k) => k.key_id}
      />
      <Listing
        id="gov-admin-keys"
        title="API keys holding tenants:admin"
        empty={
          <Empty title="No active key holds tenants:admin." call="POST /v1/tenants/:id/api-keys">
            Good: administration goes through signed-in members only.
          </Empty>
        }
        columns={KEY_COLUMNS}
        rows={keys.filter((k) => k.status !== 'revoked' && k.scopes.includes('tenants:admin'))}
        rowKey={(k) => k.key_id}
      />
    </>
  );
}

/** The tenant's active role assignments. */
function RoleListing({ assignments }: { assignments: Assignment[] }) {
  return (
    <Listing
      id="gov-roles"
      title="Role assignments"
      empty={
        <Empty title="No active role assignment." call="POST /v1/tenants/:id/role-assignments">
          Assign roles in Access management.
        </Empty>
      }
      columns={ROLE_COLUMNS}
      rows={assignments}
      rowKey={(a) => a.id}
    />
  );
}

/** Every mandate, key and active role assignment of the tenant (mandates only with mandates:read). */
function useGovernance() {
  const { session, permissions } = useAuth();
  const tenantId = session?.kind === 'user' ? session.tenantId : '';
  const canMandates = !!permissions?.includes('mandates:read');
  const mandates = useQuery({
    queryKey: ['governance-mandates', tenantId],
    queryFn: () => allPages((query) => apiOf(session).mandates.list(query)),
    enabled: canMandates,
  });
  const keys = useQuery({
    queryKey: ['api-keys', tenantId, 'all'],
    queryFn: () => allPages((query) => apiOf(session).apiKeys.list(tenantId, query)),
  });
  const roles = useQuery({
    queryKey: ['role-assignments', tenantId, 'all-active'],
    queryFn: () =>
      allPages((query) => apiOf(session).roleAssignments.list(tenantId, { status: 'active', ...query })),
  });
  return { canMandates, mandates, keys, roles };
}

export function GovernancePage() {
  const { canMandates, mandates, keys, roles } = useGovernance();
  const now = Date.now();

  return (
    <>
      <PageHeader title="Governance" />
      <section className="card" aria-labelledby="gov-mandates-title">
        <h2 id="gov-mandates-title">Mandates by state</h2>
        {!canMandates ? <p className="muted">Counting mandates needs the mandates:read permission.</p> : null}
        {canMandates && mandates.isPending ? <Loading /> : null}
        <ErrorMessage error={mandates.error} />
        {mandates.data ? (
          <StateChart mandates={mandates.data.items} truncated={mandates.data.truncated} />
        ) : null}
      </section>

      {mandates.data ? <ExpiringMandates mandates={mandates.data.items} now={now} /> : null}

      <ErrorMessage error={keys.error} />
      {keys.isPending ? <Loading /> : null}
      {keys.data ? <KeyListings keys={keys.data.items} now={now} /> : null}

      <ErrorMessage error={roles.error} />
      {roles.data ? <RoleListing assignments={roles.data.items} /> : null}
    </>
  );
}

/** One bar per state, with the numbers in the chart's table. */
function StateChart({ mandates, truncated }: { mandates: Mandate[]; truncated: boolean }) {
  const counts = STATES.map((s) => ({ state: s, count: mandates.filter((m) => m.state === s).length }));
  return (
    <>
      <BarChart
        testId="state-count"
        title="Mandates by state"
        summary={`Mandates by state: ${counts.map((c) => `${c.state} ${c.count}`).join(', ')}`}
        categoryLabel="State"
        height={160}
        series={[{ key: 'count', label: 'Mandates', className: 'series-active' }]}
        data={counts.map((c) => ({
          key: c.state,
          label: c.state,
          values: { count: c.count },
          className: `series-${c.state.toLowerCase()}`,
        }))}
      />
      <p className="muted">
        {mandates.length} mandates{truncated ? ' (the first 2,000: the counts are of those only)' : ''}.
      </p>
    </>
  );
}

/** A titled list: its count in the heading, `empty` where it has no rows. */
function Listing<T>({
  id,
  title,
  empty,
  columns,
  rows,
  rowKey,
}: {
  id: string;
  title: string;
  empty: ReactNode;
  columns: ColumnDef<T>[];
  rows: T[];
  rowKey(row: T): string;
}) {
  return (
    <section className="card" aria-labelledby={`${id}-title`} data-testid={id}>
      <h2 id={`${id}-title`}>
        {title}{' '}
        <Badge component="span" variant="light" size="lg" radius="sm">
          {rows.length}
        </Badge>
      </h2>
      {rows.length === 0 ? empty : <DataTable columns={columns} rows={rows} rowKey={rowKey} />}
    </section>
  );
}
