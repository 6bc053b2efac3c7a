/**
 * `npm run mandates:backfill-search`: the one-time backfill of the search text of mandates stored
 * before `GET /v1/mandates?q=` (docs/DECISIONS.md, "Mandate search"), so `q` finds them too. It
 * opens the MongoDB database the mandates service's own variables name (MONGO_URL and MONGO_DB) and
 * prints how many mandates it gave their search text. Idempotent: run it again after a stop, or
 * once every replica runs the release that writes the field, to catch what older replicas stored.
 */
import { createLogger } from '@mandate/shared/observability';
import { connectMongo } from '@mandate/shared/data';
import { configSchema } from './config';
import { MongoMandateStore } from './store/mongo-mandate-store';

export async function runSearchBackfill(
  env: { MONGO_URL?: string; MONGO_DB?: string },
  print: (line: string) => void,
): Promise<number> {
  const config = configSchema.parse(env);
  if (!config.MONGO_URL) throw new Error('set MONGO_URL (and MONGO_DB): the database mandates runs on');
  const connection = await connectMongo(
    config.MONGO_URL,
    config.MONGO_DB,
    createLogger('mandates-backfill', 'warn'),
  );
  try {
    const store = await MongoMandateStore.create(connection);
    const given = await store.backfillSearchText();
    print(
      given === 0
        ? 'nothing to backfill: every mandate has its search text'
        : `${given} mandate(s) given their search text; GET /v1/mandates?q= finds them now`,
    );
    return given;
  } finally {
    await connection.close();
  }
}

if (require.main === module) {
  runSearchBackfill({ MONGO_URL: process.env.MONGO_URL, MONGO_DB: process.env.MONGO_DB }, (line) =>
    process.stdout.write(`${line}\n`),
  ).catch((err: unknown) => {
    process.stderr.write(
      `mandates search backfill failed: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exit(1);
  });
}
