import { useState } from 'react';
import { useMutation } from '@tanstack/react-query';
import { Button, Checkbox, Group } from '@mantine/core';
import type { ApiKey } from '@mandate/client';
import { apiOf } from '../api';
import type { Area } from '../areas';
import { useTenantCollection } from '../tenant-collection';
import {
  ErrorMessage,
  FormCard,
  IdToken,
  PageHeader,
  RowActions,
  type RowOp,
  StateBadge,
  TextField,
  Time,
  useCreateForm,
  useSecretOnce,
} from '../ui';
import { column } from '../table';
import { PagedTable } from '../paged-list';

type Scope = ApiKey['scopes'][number];

const SCOPES: readonly Scope[] = [
  'mandates:read',
  'mandates:write',
  'verify',
  'events:read',
  'tenants:admin',
];

type KeyOp = 'rotate' | 'activate' | 'revoke';

/** What a key offers in its status: an active one is rotated, a staging one activated, any not revoked revoked. */
const keyOps = (k: ApiKey): RowOp<KeyOp>[] => [
  ...(k.status === 'active' ? [{ op: 'rotate' as const, label: 'Rotate' }] : []),
  ...(k.status === 'staging' ? [{ op: 'activate' as const, label: 'Activate' }] : []),
  ...(k.status !== 'revoked' ? [{ op: 'revoke' as const, label: 'Revoke', danger: true }] : []),
];

export function ApiKeysPage({ area }: { area: Area }) {
  const {
    session,
    tenantId,
    canWrite,
    list: keys,
    refresh: done,
  } = useTenantCollection('api-keys', area, (api, tenantId, query) => api.apiKeys.list(tenantId, query));
  const secret = useSecretOnce(done);

  const action = useMutation({
    mutationFn: async ({
      key,
      op,
    }: {
      key: ApiKey;
      op: KeyOp;
    }): Promise<{ api_key?: string; key_id: string }> => apiOf(session).apiKeys[op](tenantId, key.key_id),
    onSuccess: (res, { key, op }) => {
      secret.done(
        op === 'rotate' && res.api_key
          ? { label: `New secret of ${res.key_id} (replaces ${key.key_id})`, value: res.api_key }
          : `Key ${key.name} ${op === 'activate' ? 'activated' : 'revoked'}.`,
      );
    },
  });

  return (
    <>
      <PageHeader title="API keys" />
      {secret.view}
      {canWrite ? (
        <CreateKey
          tenantId={tenantId}
          onCreated={(k) => secret.done({ label: `Secret of the new key ${k.key_id}`, value: k.api_key })}
        />
      ) : null}
      <ErrorMessage error={action.error} />
      <PagedTable
        list={keys}
        caption={`Keys of tenant ${tenantId}`}
        columns={[
          column<ApiKey>('Name', (k) => k.name),
          column<ApiKey>('Key id', (k) => <IdToken id={k.key_id} />),
          column<ApiKey>('Scopes', (k) => k.scopes.join(', ')),
          column<ApiKey>('Status', (k) => <StateBadge state={k.status} />),
          column<ApiKey>('Created', (k) => <Time iso={k.created_at} hint={false} />),
          column<ApiKey>('Last used', (k) => (k.last_used_at ? <Time iso={k.last_used_at} /> : 'Never')),
          ...(canWrite
            ? [
                column<ApiKey>(
                  'Actions',
                  (k) => (
                    <Group gap="xs">
                      <RowActions
                        subject={k.name}
                        ops={keyOps(k)}
                        busy={action.isPending}
                        onAction={(op) => action.mutate({ key: k, op })}
                      />
                    </Group>
                  ),
                  'actions',
                ),
              ]
            : []),
        ]}
        rowKey={(k) => k.key_id}
      />
    </>
  );
}

function CreateKey({
  tenantId,
  onCreated,
}: {
  tenantId: string;
  onCreated(k: { key_id: string; api_key: string }): void;
}) {
  const [scopes, setScopes] = useState<Scope[]>(['mandates:read', 'verify']);
  const { field, create, submit } = useCreateForm({
    initial: { name: '' },
    clear: ['name'],
    send: (api, { name }) => api.apiKeys.create(tenantId, { name, scopes }),
    onCreated,
  });
  return (
    <FormCard id="create-key-title" title="Create a key" onSubmit={submit}>
      <div className="row">
        <TextField id="key-name" label="Name" {...field('name')} required maxLength={100} />
      </div>
      <Checkbox.Group label="Scopes" value={scopes} onChange={(v) => setScopes(v as Scope[])} mb="md">
        <Group gap="md" mt="xs">
          {SCOPES.map((s) => (
            <Checkbox key={s} value={s} label={s} />
          ))}
        </Group>
      </Checkbox.Group>
      <Button type="submit" disabled={create.isPending || scopes.length === 0}>
        Create key
      </Button>
      <ErrorMessage error={create.error} />
    </FormCard>
  );
}
