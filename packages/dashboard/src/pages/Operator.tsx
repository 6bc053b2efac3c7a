import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { call, qs, type Page } from '../api';
import { useAuth } from '../auth';
import {
  ErrorMessage,
  Loading,
  PageHeader,
  SecretOnce,
  formatTime,
  usePager,
  FilterSelect,
  useFormMutation,
} from '../ui';
import { DataTable, column } from '../table';

const ONBOARDING_STATUSES = ['PENDING', 'APPROVED', 'REJECTED'] as const;

interface OnboardingRequest {
  id: string;
  organization_name: string;
  contact_email: string;
  country: string;
  use_case: string;
  status: 'PENDING' | 'APPROVED' | 'REJECTED';
  created_at: string;
  tenant_id: string | null;
  rejection_reason: string | null;
}

export function OperatorPage() {
  return (
    <>
      <PageHeader title="Operator console" />
      <CreateTenant />
      <Tenants />
      <Onboarding />
    </>
  );
}

function CreateTenant() {
  const { session } = useAuth();
  const [name, setName] = useState('');
  const [plan, setPlan] = useState('beta');
  const [admin, setAdmin] = useState('');
  const [created, setCreated] = useState<{ tenant: string; key: string } | null>(null);
  const queryClient = useQueryClient();
  const [create, submit] = useFormMutation({
    mutationFn: () =>
      call<{ tenant: { id: string }; api_key: { api_key: string } }>(
        session,
        'POST',
        '/v1/platform/tenants',
        {
          name: name.trim(),
          plan,
          ...(admin.trim() ? { admin_subject_id: admin.trim() } : {}),
        },
      ),
    onSuccess: (r) => {
      setName('');
      setAdmin('');
      setCreated({ tenant: r.tenant.id, key: r.api_key.api_key });
      void queryClient.invalidateQueries({ queryKey: ['platform-tenants'] });
    },
  });
  return (
    <section aria-labelledby="tenant-title">
      <form className="card" onSubmit={submit}>
        <h2 id="tenant-title">Create a tenant</h2>
        <div className="row">
          <label htmlFor="tenant-name">Name</label>
          <input id="tenant-name" value={name} onChange={(e) => setName(e.target.value)} required />
          <label htmlFor="tenant-plan">Plan</label>
          <select id="tenant-plan" value={plan} onChange={(e) => setPlan(e.target.value)}>
            <option value="beta">beta</option>
            <option value="enterprise">enterprise</option>
          </select>
          <label htmlFor="tenant-admin">Admin subject (optional)</label>
          <input
            id="tenant-admin"
            value={admin}
            placeholder="dashboard:alice"
            onChange={(e) => setAdmin(e.target.value)}
          />
          <button type="submit" disabled={create.isPending}>
            Create tenant
          </button>
        </div>
        <ErrorMessage error={create.error} />
      </form>
      {created ? (
        <>
          <p>
            Tenant <code data-testid="created-tenant">{created.tenant}</code> created with an initial API key
            holding every scope.
          </p>
          <SecretOnce label="Initial API key" secret={created.key} onDone={() => setCreated(null)} />
        </>
      ) : null}
    </section>
  );
}

interface Tenant {
  id: string;
  name: string;
  plan: string;
  status: string;
  created_at: string;
}

const TENANT_COLUMNS = [
  column<Tenant>('Name', (t) => t.name),
  column<Tenant>('Tenant id', (t) => <code>{t.id}</code>),
  column<Tenant>('Plan', (t) => t.plan),
  column<Tenant>('Status', (t) => t.status),
  column<Tenant>('Created', (t) => formatTime(t.created_at)),
];

/** GET /v1/platform/tenants: every tenant of the platform, newest first. */
function Tenants() {
  const { session } = useAuth();
  const pager = usePager();
  const tenants = useQuery({
    queryKey: ['platform-tenants', pager.cursor],
    queryFn: () =>
      call<Page<Tenant>>(session, 'GET', '/v1/platform/tenants' + qs({ cursor: pager.cursor, limit: '20' })),
  });
  return (
    <section aria-labelledby="tenants-title">
      <h2 id="tenants-title">Tenants</h2>
      {tenants.isPending ? <Loading /> : null}
      <ErrorMessage error={tenants.error} />
      {tenants.data ? (
        <DataTable
          testId="tenants"
          caption="Tenants of the platform, newest first"
          columns={TENANT_COLUMNS}
          rows={tenants.data.data}
          rowKey={(t) => t.id}
          rowProps={(t) => ({ 'data-tenant': t.id })}
          empty="No tenants yet."
          pager={{ pager, nextCursor: tenants.data.next_cursor }}
        />
      ) : null}
    </section>
  );
}

function Onboarding() {
  const { session } = useAuth();
  const [status, setStatus] = useState('PENDING');
  const pager = usePager();
  const queryClient = useQueryClient();
  const list = useQuery({
    queryKey: ['onboarding', status, pager.cursor],
    queryFn: () =>
      call<Page<OnboardingRequest>>(
        session,
        'GET',
        '/v1/platform/onboarding-requests' + qs({ status, cursor: pager.cursor, limit: '20' }),
      ),
  });
  const [reasons, setReasons] = useState<Record<string, string>>({});
  const [approved, setApproved] = useState<{ tenant: string; key: string } | null>(null);
  const decide = useMutation({
    mutationFn: ({ r, op }: { r: OnboardingRequest; op: 'approve' | 'reject' }) =>
      call<{ tenant?: { id: string }; api_key?: { api_key: string } }>(
        session,
        'POST',
        `/v1/platform/onboarding-requests/${r.id}/${op}`,
        op === 'reject' && reasons[r.id] ? { reason: reasons[r.id] } : {},
      ),
    onSuccess: (res) => {
      if (res.tenant && res.api_key) setApproved({ tenant: res.tenant.id, key: res.api_key.api_key });
      void queryClient.invalidateQueries({ queryKey: ['onboarding'] });
      void queryClient.invalidateQueries({ queryKey: ['platform-tenants'] });
    },
  });
  return (
    <section aria-labelledby="onboarding-title">
      <h2 id="onboarding-title">Onboarding requests</h2>
      <div className="row">
        <FilterSelect
          id="onboarding-status"
          label="Status"
          value={status}
          onChange={setStatus}
          options={ONBOARDING_STATUSES}
          text={(s) => s.toLowerCase()}
          pager={pager}
        />
      </div>
      <ErrorMessage error={decide.error} />
      {approved ? (
        <>
          <p>
            Approved: tenant <code data-testid="approved-tenant">{approved.tenant}</code> created.
          </p>
          <SecretOnce
            label="Initial API key of the approved tenant"
            secret={approved.key}
            onDone={() => setApproved(null)}
          />
        </>
      ) : null}
      {list.isPending ? <Loading /> : null}
      <ErrorMessage error={list.error} />
      {list.data ? (
        <DataTable
          caption={`Onboarding requests (${status.toLowerCase()})`}
          columns={[
            column<OnboardingRequest>('Organization', (r) => r.organization_name),
            column<OnboardingRequest>('Contact', (r) => r.contact_email),
            column<OnboardingRequest>('Country', (r) => r.country),
            column<OnboardingRequest>('Use case', (r) => r.use_case),
            column<OnboardingRequest>('Requested', (r) => formatTime(r.created_at)),
            column<OnboardingRequest>(
              'Decision',
              (r) =>
                r.status === 'PENDING' ? (
                  <div className="row">
                    <button type="button" onClick={() => decide.mutate({ r, op: 'approve' })}>
                      Approve <span className="sr-only">{r.organization_name}</span>
                    </button>
                    <label htmlFor={`reason-${r.id}`} className="sr-only">
                      Rejection reason for {r.organization_name}
                    </label>
                    <input
                      id={`reason-${r.id}`}
                      placeholder="Reason"
                      value={reasons[r.id] ?? ''}
                      onChange={(e) => setReasons((s) => ({ ...s, [r.id]: e.target.value }))}
                    />
                    <button
                      type="button"
                      className="danger"
                      onClick={() => decide.mutate({ r, op: 'reject' })}
                    >
                      Reject <span className="sr-only">{r.organization_name}</span>
                    </button>
                  </div>
                ) : r.status === 'APPROVED' ? (
                  `approved → ${r.tenant_id ?? ''}`
                ) : (
                  `rejected${r.rejection_reason ? `: ${r.rejection_reason}` : ''}`
                ),
              'actions',
            ),
          ]}
          rows={list.data.data}
          rowKey={(r) => r.id}
          empty={`No ${status.toLowerCase()} requests.`}
          pager={{ pager, nextCursor: list.data.next_cursor }}
        />
      ) : null}
    </section>
  );
}
