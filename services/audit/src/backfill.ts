/**
 * `npm run audit:backfill`: the one-time backfill of the events audit stored before the
 * tamper-evident log (docs/OPERATIONS.md, "Events stored before the tamper-evident log"). It opens
 * the store audit's own variables name (MONGO_URL and MONGO_DB, else AUDIT_STORE_FILE), gives every
 * tenant event without `seq` the tenant's next one, oldest id first, with its leaf, and prints one
 * line per tenant. Idempotent and resumable: run it again after a stop, it numbers what is left.
 * Audit signs the first checkpoint over the backfilled log at its next round (AUDIT_CHECKPOINT_SECONDS).
 */
import { createLogger, type Logger } from '@mandate/shared/observability';
import { connectMongo } from '@mandate/shared/data';
import { auditConfig, type AuditConfig } from './config';
import type { BackfillReport, LogStore } from './store/event-store';
import { FileEventStore } from './store/file-event-store';
import { MongoEventStore } from './store/mongo-event-store';

/** Opens the configured store, backfills it, closes it; `print` gets the operator's lines. */
export async function runBackfill(
  config: AuditConfig,
  logger: Logger,
  print: (line: string) => void,
): Promise<BackfillReport[]> {
  const opened = await openStore(config, logger);
  try {
    print(`audit backfill on ${opened.name}`);
    const reports = await opened.store.backfillLog({
      onBatch: (p) => print(`  ${p.tenantId}: ${p.assigned} numbered so far, log size ${p.size}`),
    });
    for (const r of reports) print(`${r.tenantId}: ${r.assigned} event(s) numbered now, log size ${r.size}`);
    const total = reports.reduce((n, r) => n + r.assigned, 0);
    print(
      total === 0
        ? 'nothing to number: every tenant event has its seq'
        : `${total} event(s) numbered; audit signs a checkpoint over them at its next round`,
    );
    return reports;
  } finally {
    await opened.close();
  }
}

async function openStore(
  config: AuditConfig,
  logger: Logger,
): Promise<{ name: string; store: LogStore; close: () => Promise<void> }> {
  if (config.MONGO_URL) {
    const connection = await connectMongo(config.MONGO_URL, config.MONGO_DB, logger);
    const store = new MongoEventStore(connection);
    await store.init();
    return { name: `MongoDB database ${config.MONGO_DB}`, store, close: () => connection.close() };
  }
  if (config.AUDIT_STORE_FILE) {
    // The journal is read back in its order: every tenant event gets its seq as it is read.
    const store = await FileEventStore.open(config.AUDIT_STORE_FILE, logger);
    return { name: `journal file ${config.AUDIT_STORE_FILE}`, store, close: () => store.close() };
  }
  throw new Error('set MONGO_URL (and MONGO_DB) or AUDIT_STORE_FILE: the store audit runs on');
}

if (require.main === module) {
  const env = Object.fromEntries(
    (['MONGO_URL', 'MONGO_DB', 'AUDIT_STORE_FILE'] as const).flatMap((name) =>
      process.env[name] === undefined ? [] : [[name, process.env[name]!]],
    ),
  );
  runBackfill(auditConfig(env), createLogger('audit-backfill', 'warn'), (line) =>
    process.stdout.write(`${line}\n`),
  ).catch((err: unknown) => {
    process.stderr.write(`audit backfill failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
