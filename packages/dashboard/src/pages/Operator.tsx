import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Button, Group, TextInput } from '@mantine/core';
import { PLANS, type OnboardingRequest, type Tenant } from '@mandate/client';
import { apiOf, oneOf } from '../api';
import { useAuth } from '../auth';
import {
  Empty,
  ErrorMessage,
  IdToken,
  PageHeader,
  RowAction,
  SecretOnce,
  SelectField,
  StatusFilter,
  StateBadge,
  TextField,
  Time,
  useCreateForm,
} from '../ui';
import { column } from '../table';
import { PagedTable, usePagedList } from '../paged-list';

const ONBOARDING_STATUSES: readonly OnboardingRequest['status'][] = ['PENDING', 'APPROVED', 'REJECTED'];

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
  const [created, setCreated] = useState<{ tenant: string; key: string } | null>(null);
  const queryClient = useQueryClient();
  const { field, create, submit } = useCreateForm({
    initial: { name: '', plan: 'beta', admin: '' },
    clear: ['name', 'admin'],
    send: (api, { name, plan, admin }) =>
      api.platform.createTenant({
        name: name.trim(),
        plan: oneOf(PLANS, plan),
        ...(admin.trim() ? { admin_subject_id: admin.trim() } : {}),
      }),
    onCreated: (r) => {
      setCreated({ tenant: r.tenant.id, key: r.api_key.api_key });
      void queryClient.invalidateQueries({ queryKey: ['platform-tenants'] });
    },
  });
  return (
    <section aria-labelledby="tenant-title">
      <form className="card" onSubmit={submit}>
        <h2 id="tenant-title">Create a tenant</h2>
        <div className="row">
          <TextField id="tenant-name" label="Name" {...field('name')} required />
          <SelectField id="tenant-plan" label="Plan" {...field('plan')} options={PLANS} />
          <TextField
            id="tenant-admin"
            label="Admin subject (optional)"
            {...field('admin')}
            placeholder="dashboard:alice"
          />
          <Button type="submit" loading={create.isPending}>
            Create tenant
          </Button>
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

const TENANT_COLUMNS = [
  column<Tenant>('Name', (t) => t.name),
  column<Tenant>('Tenant id', (t) => <IdToken id={t.id} />),
  column<Tenant>('Plan', (t) => t.plan),
  column<Tenant>('Status', (t) => <StateBadge state={t.status} />),
  column<Tenant>('Created', (t) => <Time iso={t.created_at} />),
];

/** GET /v1/platform/tenants: every tenant of the platform, newest first. */
function Tenants() {
  const tenants = usePagedList({
    key: ['platform-tenants'],
    read: (api, query) => api.platform.listTenants(query),
  });
  return (
    <section aria-labelledby="tenants-title">
      <h2 id="tenants-title">Tenants</h2>
      <PagedTable
        list={tenants}
        testId="tenants"
        caption="Tenants of the platform, newest first"
        columns={TENANT_COLUMNS}
        rowKey={(t) => t.id}
        rowProps={(t) => ({ 'data-tenant': t.id })}
        empty={
          <Empty title="No tenants yet." call="POST /v1/platform/tenants">
            Create one above, or approve an onboarding request below.
          </Empty>
        }
      />
    </section>
  );
}

/** Approving or rejecting an onboarding request (with its typed reason); an approval's tenant and key. */
function useDecision() {
  const { session } = useAuth();
  const queryClient = useQueryClient();
  const [reasons, setReasons] = useState<Record<string, string>>({});
  const [approved, setApproved] = useState<{ tenant: string; key: string } | null>(null);
  const decide = useMutation({
    mutationFn: async ({ r, op }: { r: OnboardingRequest; op: 'approve' | 'reject' }) => {
      const platform = apiOf(session).platform;
      if (op === 'approve') return platform.approveOnboardingRequest(r.id, {});
      await platform.rejectOnboardingRequest(r.id, reasons[r.id] ? { reason: reasons[r.id] } : {});
      return null;
    },
    onSuccess: (res) => {
      if (res) setApproved({ tenant: res.tenant.id, key: res.api_key.api_key });
      void queryClient.invalidateQueries({ queryKey: ['onboarding'] });
      void queryClient.invalidateQueries({ queryKey: ['platform-tenants'] });
    },
  });
  return { decide, reasons, setReasons, approved, setApproved };
}
type Decision = ReturnType<typeof useDecision>;

/** A request's decision cell: approve, or reject with a reason, while pending; the outcome after. */
function decisionCell(r: OnboardingRequest, { decide, reasons, setReasons }: Decision) {
  return r.status === 'PENDING' ? (
    <Group gap="xs">
      <RowAction
        subject={r.organization_name}
        disabled={decide.isPending}
        onClick={() => decide.mutate({ r, op: 'approve' })}
      >
        Approve
      </RowAction>
      <TextInput
        id={`reason-${r.id}`}
        size="xs"
        aria-label={`Rejection reason for ${r.organization_name}`}
        placeholder="Reason"
        value={reasons[r.id] ?? ''}
        onChange={(e) => {
          const value = e.currentTarget.value;
          setReasons((s) => ({ ...s, [r.id]: value }));
        }}
      />
      <RowAction
        subject={r.organization_name}
        danger
        disabled={decide.isPending}
        onClick={() => decide.mutate({ r, op: 'reject' })}
      >
        Reject
      </RowAction>
    </Group>
  ) : r.status === 'APPROVED' ? (
    `approved → ${r.tenant_id ?? ''}`
  ) : (
    `rejected${r.rejection_reason ? `: ${r.rejection_reason}` : ''}`
  );
}

/** The approved tenant's id and its initial API key, shown once. */
function Approved({ decision: { approved, setApproved } }: { decision: Decision }) {
  return approved ? (
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
  ) : null;
}

function Onboarding() {
  const requests = usePagedList<OnboardingRequest, 'status'>({
    key: ['onboarding'],
    read: (api, query) =>
      api.platform.listOnboardingRequests({ ...query, status: oneOf(ONBOARDING_STATUSES, query.status) }),
    filters: { status: 'PENDING' },
  });
  const status = requests.values.status;
  const decision = useDecision();
  return (
    <section aria-labelledby="onboarding-title">
      <h2 id="onboarding-title">Onboarding requests</h2>
      <div className="row">
        <StatusFilter id="onboarding-status" {...requests.field('status')} options={ONBOARDING_STATUSES} />
      </div>
      <ErrorMessage error={decision.decide.error} />
      <Approved decision={decision} />
      <PagedTable
        list={requests}
        caption={`Onboarding requests (${status.toLowerCase()})`}
        columns={[
          column<OnboardingRequest>('Organization', (r) => r.organization_name),
          column<OnboardingRequest>('Contact', (r) => r.contact_email),
          column<OnboardingRequest>('Country', (r) => r.country),
          column<OnboardingRequest>('Use case', (r) => r.use_case),
          column<OnboardingRequest>('Requested', (r) => <Time iso={r.created_at} />),
          column<OnboardingRequest>('Decision', (r) => decisionCell(r, decision), 'actions'),
        ]}
        rowKey={(r) => r.id}
        empty={
          <Empty title={`No ${status.toLowerCase()} requests.`} call="POST /v1/onboarding/request">
            Organizations ask to join through the public onboarding request; each waits here for approval.
          </Empty>
        }
      />
    </section>
  );
}
