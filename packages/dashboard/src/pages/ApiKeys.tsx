import { useState } from 'react';
import { useMutation } from '@tanstack/react-query';
import { Button, Checkbox, Group, NativeSelect, Text } from '@mantine/core';
import { API_KEY_SCOPES as SCOPES, type ApiKey } from '@mandate/client';
import { apiOf } from '../api';
import type { Area } from '../areas';
import type { Session } from '../session';
import { useTenantCollection } from '../tenant-collection';
import {
  ErrorMessage,
  Fact,
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
import { ConfirmDialog } from '../confirm';
import { formatTime, relativeTime, shortId } from '../format';
import { PagedTable } from '../paged-list';
import { LinkedItemPanel, useLinkedItem } from '../linked-item';

type Scope = ApiKey['scopes'][number];

type KeyOp = 'rotate' | 'activate' | 'revoke';

/** The grace periods the activation offers the key it replaces (docs/API.md#api-key-rotation-grace). */
const GRACE_CHOICES = [
  { value: '0', label: 'None: revoke the old key now' },
  { value: '3600', label: '1 hour' },
  { value: '86400', label: '24 hours (default)' },
  { value: '604800', label: '7 days' },
] as const;

/** A key as a confirmation names it: its name and its shortened id. */
const keyLabel = (k: ApiKey) => `${k.name} (key_…${shortId(k.key_id)})`;

/** When the key was last used, as the confirmation says it: who still depends on it. */
const lastUse = (k: ApiKey) =>
  k.last_used_at
    ? `It was last used ${relativeTime(k.last_used_at)} (${formatTime(k.last_used_at)}): whatever uses it will get 401.`
    : 'It has never been used.';

/** What a key offers in its status: an active one is rotated, a staging one activated, any not revoked revoked. */
const keyOps = (k: ApiKey): RowOp<KeyOp>[] => [
  ...(k.status === 'active' ? [{ op: 'rotate' as const, label: 'Rotate' }] : []),
  ...(k.status === 'staging' ? [{ op: 'activate' as const, label: 'Activate' }] : []),
  ...(k.status !== 'revoked' ? [{ op: 'revoke' as const, label: 'Revoke', danger: true }] : []),
];

/** A key's actions (KeyOp) as one mutation, with the change awaiting confirmation and the grace period chosen. */
function useKeyAction(session: Session | null, tenantId: string, secret: ReturnType<typeof useSecretOnce>) {
  const [asked, setAsked] = useState<{ key: ApiKey; op: 'activate' | 'revoke' } | null>(null);
  const [grace, setGrace] = useState('86400');
  const action = useMutation({
    mutationFn: async ({
      key,
      op,
    }: {
      key: ApiKey;
      op: KeyOp;
    }): Promise<{ api_key?: string; key_id: string }> =>
      op === 'activate'
        ? apiOf(session).apiKeys.activate(tenantId, key.key_id, { grace_seconds: Number(grace) })
        : apiOf(session).apiKeys[op](tenantId, key.key_id),
    onSuccess: (res, { key, op }) => {
      setAsked(null);
      secret.done(
        op === 'rotate' && res.api_key
          ? { label: `New secret of ${res.key_id} (replaces ${key.key_id})`, value: res.api_key }
          : `Key ${key.name} ${op === 'activate' ? 'activated' : 'revoked'}.`,
      );
    },
  });
  return { action, asked, setAsked, grace, setGrace };
}
type KeyAction = ReturnType<typeof useKeyAction>;

/** Asks before a key is activated (with the old key's grace period) or revoked, saying what it stops. */
function ConfirmKeyChange({
  change: { action, asked, setAsked, grace, setGrace },
  replaced,
}: {
  change: KeyAction;
  replaced(k: ApiKey): ApiKey | undefined;
}) {
  return (
    <ConfirmDialog
      opened={!!asked}
      title={asked?.op === 'activate' ? 'Activate key' : 'Revoke key'}
      confirm={asked?.op === 'activate' ? 'Activate key' : 'Revoke key'}
      danger={asked?.op === 'revoke'}
      pending={action.isPending}
      error={asked ? action.error : null}
      onClose={() => setAsked(null)}
      onConfirm={() => asked && action.mutate(asked)}
      impact={
        !asked ? null : asked.op === 'revoke' ? (
          <>
            {keyLabel(asked.key)} stops working immediately. {lastUse(asked.key)} This cannot be undone.
          </>
        ) : (
          <ActivateImpact key_={asked.key} old={replaced(asked.key)} grace={Number(grace)} />
        )
      }
    >
      {asked?.op === 'activate' ? (
        <NativeSelect
          id="activate-grace"
          label="Grace period for the old key"
          description="The old key keeps working this long, so integrations can switch; then it is revoked."
          value={grace}
          onChange={(e) => setGrace(e.currentTarget.value)}
          data={GRACE_CHOICES.map((c) => ({ value: c.value, label: c.label }))}
        />
      ) : null}
    </ConfirmDialog>
  );
}

/** The keys table's columns; a writer's last one rotates, activates or revokes a key. */
function keyColumns(canWrite: boolean, { action, setAsked }: KeyAction) {
  return [
    column<ApiKey>('Name', (k) => k.name),
    column<ApiKey>('Key id', (k) => <IdToken id={k.key_id} />),
    column<ApiKey>('Scopes', (k) => k.scopes.join(', ')),
    column<ApiKey>('Status', (k) => (
      <>
        <StateBadge state={k.status} />
        <KeyLinks k={k} />
      </>
    )),
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
                  onAction={(op) => {
                    action.reset();
                    if (op === 'rotate') action.mutate({ key: k, op });
                    else setAsked({ key: k, op });
                  }}
                />
              </Group>
            ),
            'actions',
          ),
        ]
      : []),
  ];
}

export function ApiKeysPage({ area }: { area: Area }) {
  const {
    session,
    tenantId,
    canWrite,
    list: keys,
    refresh: done,
  } = useTenantCollection('api-keys', area, (api, tenantId, query) => api.apiKeys.list(tenantId, query));
  const secret = useSecretOnce(done);
  const change = useKeyAction(session, tenantId, secret);
  const replaced = (k: ApiKey) => keys.query.data?.data.find((o) => o.key_id === k.replaces_key_id);

  return (
    <>
      <PageHeader title="API keys" />
      <LinkedKey tenantId={tenantId} />
      {secret.view}
      {canWrite ? (
        <CreateKey
          tenantId={tenantId}
          onCreated={(k) => secret.done({ label: `Secret of the new key ${k.key_id}`, value: k.api_key })}
        />
      ) : null}
      {change.asked ? null : <ErrorMessage error={change.action.error} />}
      <ConfirmKeyChange change={change} replaced={replaced} />
      <PagedTable
        list={keys}
        caption={`Keys of tenant ${tenantId}`}
        columns={keyColumns(canWrite, change)}
        rowKey={(k) => k.key_id}
      />
    </>
  );
}

/** The key the URL names (`?key=key_…`, the header's "Go to id"): its facts above the list. */
function LinkedKey({ tenantId }: { tenantId: string }) {
  const linked = useLinkedItem('key', (api, id) => api.apiKeys.get(tenantId, id));
  return (
    <LinkedItemPanel linked={linked} label="API key">
      {(k) => (
        <dl className="facts">
          <Fact term="Name">{k.name}</Fact>
          <Fact term="Status">
            <StateBadge state={k.status} /> <KeyLinks k={k} />
          </Fact>
          <Fact term="Scopes">{k.scopes.join(', ')}</Fact>
          <Fact term="Created">
            <Time iso={k.created_at} />
          </Fact>
          <Fact term="Last used">{k.last_used_at ? <Time iso={k.last_used_at} /> : 'Never'}</Fact>
        </dl>
      )}
    </LinkedItemPanel>
  );
}

/** What activating a staging key does to the key it replaces, with the grace period chosen. */
function ActivateImpact({ key_, old, grace }: { key_: ApiKey; old: ApiKey | undefined; grace: number }) {
  const oldLabel = old
    ? keyLabel(old)
    : key_.replaces_key_id
      ? `key_…${shortId(key_.replaces_key_id)}`
      : null;
  if (!oldLabel) return <>{keyLabel(key_)} becomes the active key.</>;
  const until = new Date(Date.now() + grace * 1000).toISOString();
  return grace === 0 ? (
    <>
      {keyLabel(key_)} becomes active and {oldLabel} stops working immediately. {old ? lastUse(old) : null}{' '}
      This cannot be undone.
    </>
  ) : (
    <>
      {keyLabel(key_)} becomes active. {oldLabel} keeps working until {formatTime(until)}, then is revoked:
      switch every integration to the new secret before then.
    </>
  );
}

/** A key's rotation links, both ways: the key it replaces, the key that replaced it, and its grace period. */
function KeyLinks({ k }: { k: ApiKey }) {
  const parts = [
    k.replaces_key_id ? `replaces key_…${shortId(k.replaces_key_id)}` : null,
    k.replaced_by_key_id ? `replaced by key_…${shortId(k.replaced_by_key_id)}` : null,
    k.status === 'active' && k.grace_ends_at ? `works until ${formatTime(k.grace_ends_at)}` : null,
  ].filter(Boolean);
  if (parts.length === 0) return null;
  return (
    <Text size="xs" c="dimmed" data-testid="key-links">
      {parts.join('; ')}
    </Text>
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
