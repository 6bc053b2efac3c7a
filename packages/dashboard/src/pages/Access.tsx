import { useState } from 'react';
import { useMutation } from '@tanstack/react-query';
import { Badge, Button, Group, NativeSelect, Text } from '@mantine/core';
import { PERMISSION_DESCRIPTIONS, ROLES, ROLE_PERMISSIONS, type RoleAssignment } from '@mandate/client';
import { apiOf } from '../api';
import type { Area } from '../areas';
import type { Session } from '../session';
import { useAuth } from '../auth';
import { useTenantCollection } from '../tenant-collection';
import {
  ErrorMessage,
  Fact,
  FormCard,
  notifyDone,
  PageHeader,
  RowAction,
  SelectField,
  StateBadge,
  TextField,
  Time,
  useCreateForm,
} from '../ui';
import { column } from '../table';
import { ConfirmDialog } from '../confirm';
import { PagedTable } from '../paged-list';
import { LinkedItemPanel, useLinkedItem } from '../linked-item';

/** What a role lets its holder do, in words: the API's own table of roles and permissions. */
function grantsOf(role: string): string {
  const permissions = ROLE_PERMISSIONS[role as keyof typeof ROLE_PERMISSIONS] ?? [];
  return permissions.map((p) => PERMISSION_DESCRIPTIONS[p]).join('; ');
}

type Assignment = RoleAssignment;

/** The role assignment the URL names (`?assignment=ras_…`, the header's "Go to id"), with what its roles grant. */
function LinkedAssignment({ tenantId }: { tenantId: string }) {
  const linked = useLinkedItem('assignment', (api, id) => api.roleAssignments.get(tenantId, id));
  return (
    <LinkedItemPanel linked={linked} label="Role assignment">
      {(a) => (
        <dl className="facts">
          <Fact term="Subject">
            <code>{a.subject_id}</code>
          </Fact>
          <Fact term="Roles">{a.roles.join(', ')}</Fact>
          <Fact term="Grants">{a.roles.map(grantsOf).join('; ')}</Fact>
          <Fact term="Status">
            <StateBadge state={a.status} />
          </Fact>
          <Fact term="Assigned">
            <Time iso={a.created_at} />
          </Fact>
        </dl>
      )}
    </LinkedItemPanel>
  );
}

/** Changing an assignment's roles, or revoking it behind a confirmation. */
function useRoleChange(session: Session | null, tenantId: string, refresh: () => unknown) {
  const [asked, setAsked] = useState<Assignment | null>(null);
  const change = useMutation({
    mutationFn: ({ a, roles }: { a: Assignment; roles?: string[] }) =>
      roles
        ? apiOf(session).roleAssignments.update(tenantId, a.id, { roles })
        : apiOf(session).roleAssignments.revoke(tenantId, a.id),
    onSuccess: (_, { a, roles }) => {
      setAsked(null);
      notifyDone(roles ? `${a.subject_id} is now ${roles.join(', ')}.` : `${a.subject_id}'s role revoked.`);
      void refresh();
    },
  });
  return { asked, setAsked, change };
}
type RoleChange = ReturnType<typeof useRoleChange>;

/** Asks before an assignment is revoked, saying what its subject loses. */
function ConfirmRevoke({
  roleChange: { asked, setAsked, change },
  tenantId,
}: {
  roleChange: RoleChange;
  tenantId: string;
}) {
  return (
    <ConfirmDialog
      opened={!!asked}
      title="Revoke role"
      confirm="Revoke role"
      pending={change.isPending}
      error={asked ? change.error : null}
      onClose={() => setAsked(null)}
      onConfirm={() => asked && change.mutate({ a: asked })}
      impact={
        asked ? (
          <>
            {asked.subject_id} loses {asked.roles.join(', ')} in tenant {tenantId} immediately: their next
            request is refused (403), signed in or not. This cannot be undone: assign a role again to give
            access back.
          </>
        ) : null
      }
    />
  );
}

/** The assignments table's columns; a writer's last one changes or revokes an active assignment. */
function assignmentColumns(
  canWrite: boolean,
  own: (a: Assignment) => boolean,
  { setAsked, change }: RoleChange,
) {
  return [
    column<Assignment>('Subject', (a) => (
      <>
        {a.subject_id}
        {own(a) ? (
          <Badge size="sm" variant="light" ml="xs">
            you
          </Badge>
        ) : null}
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
                  onRevoke={() => {
                    change.reset();
                    setAsked(a);
                  }}
                />
              ) : null,
            'actions',
          ),
        ]
      : []),
  ];
}

export function AccessPage({ area }: { area: Area }) {
  const { me } = useAuth();
  const { session, tenantId, canWrite, list, refresh } = useTenantCollection(
    'role-assignments',
    area,
    (api, tenantId, query) => api.roleAssignments.list(tenantId, query),
  );
  const roleChange = useRoleChange(session, tenantId, refresh);

  const own = (a: Assignment) => a.status === 'active' && a.subject_id === me?.subject_id;
  return (
    <>
      <PageHeader title="Access management" />
      <LinkedAssignment tenantId={tenantId} />
      {canWrite ? <Assign tenantId={tenantId} onDone={() => void refresh()} /> : null}
      {roleChange.asked ? null : <ErrorMessage error={roleChange.change.error} />}
      <ConfirmRevoke roleChange={roleChange} tenantId={tenantId} />
      <PagedTable
        list={list}
        caption={`Role assignments of tenant ${tenantId}`}
        columns={assignmentColumns(canWrite, own, roleChange)}
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
    <Group gap="xs" wrap="wrap">
      <NativeSelect
        id={id}
        size="xs"
        aria-label={`Role of ${a.subject_id}`}
        value={role}
        disabled={own || busy}
        onChange={(e) => setRole(e.currentTarget.value)}
        data={[...ROLES]}
        title={`${role} may: ${grantsOf(role)}`}
      />
      <RowAction
        subject={`of ${a.subject_id}`}
        disabled={own || busy || role === a.roles[0]}
        onClick={() => onRoles([role])}
      >
        Save role
      </RowAction>
      <RowAction subject={a.subject_id} danger disabled={own || busy} onClick={onRevoke}>
        Revoke
      </RowAction>
      {own ? (
        <Text size="xs" c="dimmed">
          Your own assignment cannot be revoked or downgraded.
        </Text>
      ) : null}
    </Group>
  );
}

function Assign({ tenantId, onDone }: { tenantId: string; onDone(): void }) {
  const { field, create, submit } = useCreateForm({
    initial: { subject: '', role: 'tenant_viewer' },
    clear: ['subject'],
    send: (api, { subject, role }) =>
      api.roleAssignments.create(tenantId, { subject_id: subject.trim(), roles: [role] }),
    onCreated: (_, { subject, role }) => {
      notifyDone(`${subject.trim()} is now ${role}.`);
      onDone();
    },
  });
  return (
    <FormCard id="assign-title" title="Assign a role" onSubmit={submit}>
      <div className="row">
        <TextField
          id="assign-subject"
          label="Subject"
          {...field('subject')}
          placeholder="dashboard:alice"
          required
        />
        <SelectField id="assign-role" label="Role" {...field('role')} options={ROLES} />
        <Button type="submit" disabled={create.isPending}>
          Assign
        </Button>
      </div>
      <Text size="sm" id="assign-role-grants" data-testid="role-grants" aria-live="polite">
        {field('role').value} may: {grantsOf(field('role').value)}.
      </Text>
      <ErrorMessage error={create.error} />
    </FormCard>
  );
}
