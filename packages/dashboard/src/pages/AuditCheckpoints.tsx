import { useQuery } from '@tanstack/react-query';
import { Button } from '@mantine/core';
import type { AuditCheckpoint } from '@mandate/client';
import { apiOf } from '../api';
import { useAuth } from '../auth';
import { column } from '../table';
import { PagedTable, usePagedList } from '../paged-list';
import { Empty, ErrorMessage, Fact, Loading, Time } from '../ui';

/** The kid of a checkpoint's JWS (its protected header), or undefined when it names none. */
export function keyIdOf(jws: string): string | undefined {
  try {
    const header = JSON.parse(atob(jws.split('.')[0]!.replace(/-/g, '+').replace(/_/g, '/'))) as {
      kid?: unknown;
    };
    return typeof header.kid === 'string' ? header.kid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Saves the checkpoint as the offline checker reads it (`--checkpoint FILE`, docs/API.md#proving-the-log):
 * the JSON the API answers, members as served.
 */
function download(checkpoint: AuditCheckpoint): void {
  const blob = new Blob([JSON.stringify(checkpoint, null, 2) + '\n'], { type: 'application/json' });
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = `checkpoint-${checkpoint.tree_size}.json`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const DownloadButton = ({ checkpoint, label }: { checkpoint: AuditCheckpoint; label: string }) => (
  <Button
    size="xs"
    variant="light"
    aria-label={`${label} (tree size ${checkpoint.tree_size})`}
    onClick={() => download(checkpoint)}
  >
    {label}
  </Button>
);

const CHECKPOINT_COLUMNS = [
  column<AuditCheckpoint>('Tree size', (c) => c.tree_size.toLocaleString('en')),
  column<AuditCheckpoint>(
    'Signed (UTC)',
    (c) => <Time iso={c.issued_at} hint={false} zone={false} />,
    'nowrap',
  ),
  column<AuditCheckpoint>('Root hash', (c) => <code className="ellipsis">{c.root_hash}</code>),
  column<AuditCheckpoint>('Key id', (c) => <code className="ellipsis">{keyIdOf(c.jws) ?? '—'}</code>),
  column<AuditCheckpoint>('File', (c) => <DownloadButton checkpoint={c} label="Download" />),
];

/** The latest checkpoint's facts (tree size, root, time, key id) and its download. */
function LatestCheckpoint({ checkpoint }: { checkpoint: AuditCheckpoint }) {
  return (
    <div data-testid="latest-checkpoint">
      <dl className="facts">
        <Fact term="Tree size" testId="checkpoint-size">
          {checkpoint.tree_size.toLocaleString('en')} events
        </Fact>
        <Fact term="Root hash" testId="checkpoint-root">
          <code>{checkpoint.root_hash}</code>
        </Fact>
        <Fact term="Signed">
          <Time iso={checkpoint.issued_at} />
        </Fact>
        <Fact term="Key id" testId="checkpoint-kid">
          <code>{keyIdOf(checkpoint.jws) ?? '—'}</code>
        </Fact>
      </dl>
      <DownloadButton checkpoint={checkpoint} label="Download latest checkpoint" />
    </div>
  );
}

/**
 * The tenant's signed checkpoints (docs/API.md#proving-the-log): the latest (tree size, root, time,
 * key id), a download of each as the file an auditor keeps, and the list, largest first.
 */
export function AuditCheckpoints() {
  const { session } = useAuth();
  const latest = useQuery({
    queryKey: ['audit-checkpoints', 'latest'],
    // The list's first item (largest tree_size first): with no checkpoint yet it is empty, where
    // GET /v1/audit/checkpoints/latest would answer 404, an error in the browser's console.
    queryFn: async () =>
      (await apiOf(session).events.listAuditCheckpoints({ limit: 1 }).page()).data[0] ?? null,
  });
  const list = usePagedList<AuditCheckpoint>({
    key: ['audit-checkpoints', 'list'],
    read: (api, query) => api.events.listAuditCheckpoints(query),
    limit: 10,
  });
  return (
    <section className="card" aria-labelledby="checkpoints-title" data-testid="checkpoints">
      <h2 id="checkpoints-title">Signed checkpoints</h2>
      <p>
        Each checkpoint signs the size and root of this tenant&apos;s log. Keep one: later, the evidence
        checker proves with it (<code>--checkpoint FILE</code>) that the log has only grown since.
      </p>
      {latest.isPending ? <Loading /> : null}
      <ErrorMessage error={latest.error} />
      {latest.data === null ? (
        <Empty title="No checkpoint yet." call="GET /v1/audit/checkpoints">
          The log is empty, or its first checkpoint is not signed yet (audit signs one every
          AUDIT_CHECKPOINT_SECONDS while the log grows).
        </Empty>
      ) : null}
      {latest.data ? <LatestCheckpoint checkpoint={latest.data} /> : null}
      {latest.data ? (
        <PagedTable
          list={list}
          testId="checkpoint-list"
          caption="Checkpoints, largest tree first"
          columns={CHECKPOINT_COLUMNS}
          rowKey={(c) => String(c.tree_size)}
          empty={<Empty title="No checkpoint yet." />}
        />
      ) : null}
    </section>
  );
}
