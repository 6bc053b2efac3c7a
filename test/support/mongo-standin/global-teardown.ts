import type { MongoStandin } from './index';

/** jest globalTeardown: stops the stand-ins globalSetup started, if it started any. */
export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as { mongoStandins?: MongoStandin[] };
  await Promise.all((holder.mongoStandins ?? []).map((s) => s.stop()));
  holder.mongoStandins = undefined;
}
