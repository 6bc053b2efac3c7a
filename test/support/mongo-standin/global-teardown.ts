import type { MongoStandin } from './index';

/** jest globalTeardown: stops the stand-in globalSetup started, if it started one. */
export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as { mongoStandin?: MongoStandin };
  await holder.mongoStandin?.stop();
  holder.mongoStandin = undefined;
}
