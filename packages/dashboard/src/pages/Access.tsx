import { useState } from 'react';
import { useMutation } from '@tanstack/react-query';
import type { RoleAssignment } from '@mandate/client';
import { apiOf } from '../api';
import type { Area } from '../areas';
import { useAuth } from '../auth';
import { useTenantCollection } from '../tenant-collection';
import {
  ErrorMessage,
  FormCard,
  PageHeader,
  SelectField,
  StateBadge,
  TextField,
  Time,
  useFormMutation,
} from '../ui';
import { column } from '../table';
import { PagedTable } from '../paged-list';

const ROLES = ['tenant_admin', 'tenant_operator', 'tenant_viewer', 'tenant_auditor'] as const;

type Assignment = RoleAssignment;

export function AccessPage({ area }: { area: Area }) {
  const { me } = useAuth();
  const { session, tenantId, canWrite, list, refresh } = useTenantCollection(
    'role-assignments',
    area,
    (api, tenantId, query) => api.roleAssignments.list(tenantId, query),
  );
  const change = useMutation({
    mutationFn: ({ a, roles }: { a: Assignment; roles?: string[] }) =>
      roles
        ? apiOf(session).roleAssignments.update(tenantId, a.id, { roles })
        : apiOf(session).roleAssignments.revoke(tenantId, a.id),
    onSuccess: () => void refresh(),
  });

  const own = (a: Assignment) => a.status === 'active' && a.subject_id === me?.subject_id;
  return (
    <>
      <PageHeader title="Access management" />
      {canWrite ? <Assign tenantId={tenantId} onDone={() => void refresh()} /> : null}
      <ErrorMessage error={change.error} />
      <PagedTable
        list={list}
        caption={`Role assignments of tenant ${tenantId}`}
        columns={[
          column<Assignment>('Subject', (a) => (
            <>
              {a.subject_id}
              {own(a) ? <span className="badge">you</span> : null}
            </>
          )),
          column<Assignment>('Role', (a) => a.roles.join(', ')),
          column<Assignment>('Status', (a) => <StateBadge state={a.status} />),
          column<Assignment>('Updated', (a) => <Time iso={a.updated_at} />),
          ...(canWrite
            ? [
                column<Assignment>(
                  'Change',
                  (a) =>
                    a.status === 'active' ? (
                      <RoleControls
                        a={a}
                        own={own(a)}
                        busy={change.isPending}
                        onRoles={(roles) => change.mutate({ a, roles })}
                        onRevoke={() => change.mutate({ a })}
                      />
                    ) : null,
                  'actions',
                ),
              ]
            : []),
        ]}
        rowKey={(a) => a.id}
        rowProps={(a) => ({ 'data-subject': a.subject_id })}
      />
    </>
  );
}

/** Your own active assignment cannot be revoked or downgraded (the API answers 409): disabled here. */
function RoleControls({
  a,
  own,
  busy,
  onRoles,
  onRevoke,
}: {
  a: Assignment;
  own: boolean;
  busy: boolean;
  onRoles(roles: string[]): void;
  onRevoke(): void;
}) {
  const [role, setRole] = useState<string>(a.roles[0] ?? 'tenant_viewer');
  const id = `role-${a.id}`;
  return (
    <div className="row">
      <label htmlFor={id} className="sr-only">
        Role of {a.subject_id}
      </label>
      <select id={id} value={role} disabled={own || busy} onChange={(e) => setRole(e.target.value)}>
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>
      <button type="button" disabled={own || busy || role === a.roles[0]} onClick={() => onRoles([role])}>
        Save role <span className="sr-only">of {a.subject_id}</span>
      </button>
      <button type="button" className="danger" disabled={own || busy} onClick={onRevoke}>
        Revoke <span className="sr-only">{a.subject_id}</span>
      </button>
      {own ? <span className="muted">Your own assignment cannot be revoked or downgraded.</span> : null}
    </div>
  );
}

function Assign({ tenantId, onDone }: { tenantId: string; onDone(): void }) {
  const { session } = useAuth();
  const [subject, setSubject] = useState('');
  const [role, setRole] = useState<string>('tenant_viewer');
  const [create, submit] = useFormMutation({
    mutationFn: () =>
      apiOf(session).roleAssignments.create(tenantId, { subject_id: subject.trim(), roles: [role] }),
    onSuccess: () => {
      setSubject('');
      onDone();
    },
  });
  return (
    <FormCard id="assign-title" title="Assign a role" onSubmit={submit}>
      <div className="row">
        <TextField
          id="assign-subject"
          label="Subject"
          value={subject}
          onChange={setSubject}
          placeholder="dashboard:alice"
          required
        />
        <SelectField id="assign-role" label="Role" value={role} onChange={setRole} options={ROLES} />
        <button type="submit" disabled={create.isPending}>
          Assign
        </button>
      </div>
      <ErrorMessage error={create.error} />
    </FormCard>
  );
}
