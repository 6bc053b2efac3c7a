import type { ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { allPages } from '../api';
import { useAuth } from '../auth';
import { BarChart } from '../chart';
import { ErrorMessage, Loading, PageHeader, formatTime } from '../ui';

const STATES = ['ACTIVE', 'SUSPENDED', 'REVOKED', 'EXPIRED'] as const;
const DAY = 86_400_000;

interface Mandate {
  id: string;
  principal: { id: string };
  delegate: { id: string };
  state: string;
  expires_at: string | null;
}
interface ApiKey {
  key_id: string;
  name: string;
  scopes: string[];
  status: string;
  created_at: string;
  last_used_at: string | null;
}
interface Assignment {
  id: string;
  subject_id: string;
  roles: string[];
  status: string;
  updated_at: string;
}

/** An active key not used for 30 days: its last use, or its creation when never used, is older. */
export const unusedFor30Days = (k: ApiKey, now: number) =>
  k.status !== 'revoked' && now - Date.parse(k.last_used_at ?? k.created_at) > 30 * DAY;

export const expiringWithin7Days = (m: Mandate, now: number) =>
  m.state === 'ACTIVE' &&
  !!m.expires_at &&
  Date.parse(m.expires_at) > now &&
  Date.parse(m.expires_at) - now <= 7 * DAY;

export function GovernancePage() {
  const { session, permissions } = useAuth();
  const tenantId = session?.kind === 'user' ? session.tenantId : '';
  const canMandates = !!permissions?.includes('mandates:read');
  const mandates = useQuery({
    queryKey: ['governance-mandates', tenantId],
    queryFn: () => allPages<Mandate>(session, '/v1/mandates'),
    enabled: canMandates,
  });
  const keys = useQuery({
    queryKey: ['api-keys', tenantId, 'all'],
    queryFn: () => allPages<ApiKey>(session, `/v1/tenants/${tenantId}/api-keys`),
  });
  const roles = useQuery({
    queryKey: ['role-assignments', tenantId, 'all-active'],
    queryFn: () =>
      allPages<Assignment>(session, `/v1/tenants/${tenantId}/role-assignments`, { status: 'active' }),
  });
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

      {mandates.data ? (
        <Listing
          id="gov-expiring"
          title="Expiring within 7 days"
          empty="No active mandate expires within 7 days."
          head={['Mandate', 'Principal', 'Delegate', 'Expires']}
          rows={mandates.data.items
            .filter((m) => expiringWithin7Days(m, now))
            .sort((a, b) => Date.parse(a.expires_at!) - Date.parse(b.expires_at!))
            .map((m) => [
              m.id,
              <Link key="l" to={`/mandates/${m.id}`}>
                {m.id}
              </Link>,
              m.principal.id,
              m.delegate.id,
              formatTime(m.expires_at),
            ])}
        />
      ) : null}

      <ErrorMessage error={keys.error} />
      {keys.isPending ? <Loading /> : null}
      {keys.data ? (
        <>
          <Listing
            id="gov-unused"
            title="API keys unused for 30 days"
            empty="Every active key was used (or created) within the last 30 days."
            head={['Key', 'Name', 'Status', 'Last used']}
            rows={keys.data.items
              .filter((k) => unusedFor30Days(k, now))
              .map((k) => [
                k.key_id,
                k.key_id,
                k.name,
                k.status,
                k.last_used_at ? formatTime(k.last_used_at) : 'never',
              ])}
          />
          <Listing
            id="gov-admin-keys"
            title="API keys holding tenants:admin"
            empty="No active key holds tenants:admin."
            head={['Key', 'Name', 'Status', 'Last used']}
            rows={keys.data.items
              .filter((k) => k.status !== 'revoked' && k.scopes.includes('tenants:admin'))
              .map((k) => [
                k.key_id,
                k.key_id,
                k.name,
                k.status,
                k.last_used_at ? formatTime(k.last_used_at) : 'never',
              ])}
          />
        </>
      ) : null}

      <ErrorMessage error={roles.error} />
      {roles.data ? (
        <Listing
          id="gov-roles"
          title="Role assignments"
          empty="No active role assignment."
          head={['Subject', 'Roles', 'Since']}
          rows={roles.data.items.map((a) => [
            a.id,
            a.subject_id,
            a.roles.join(', '),
            formatTime(a.updated_at),
          ])}
        />
      ) : null}
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

/** A titled table; each row's first cell is its key. */
function Listing({
  id,
  title,
  empty,
  head,
  rows,
}: {
  id: string;
  title: string;
  empty: string;
  head: string[];
  rows: [string, ...ReactNode[]][];
}) {
  return (
    <section className="card" aria-labelledby={`${id}-title`} data-testid={id}>
      <h2 id={`${id}-title`}>
        {title} <span className="badge">{rows.length}</span>
      </h2>
      {rows.length === 0 ? (
        <p>{empty}</p>
      ) : (
        <table>
          <thead>
            <tr>
              {head.map((h) => (
                <th key={h} scope="col">
                  {h}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map(([key, ...cells]) => (
              <tr key={key}>
                {cells.map((c, i) => (
                  <td key={i}>{c}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
