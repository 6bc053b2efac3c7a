import { createLogger, type Logger } from '../observability/logger';
import type { AdapterFactory } from './contract';
import { testTokens } from './http';
import { CapturingPublisher } from './publisher';

/** What every service's createApp returns, as far as a test starts and stops it. */
interface StartableApp {
  start(port: number): Promise<{ url: string }>;
  stop(): Promise<void>;
}

/** What every service's test app is built with: a fresh store, a capturing publisher, the test tokens, no logs. */
export interface TestAppBase<S> {
  store: S;
  publisher: CapturingPublisher;
  tokens: typeof testTokens;
  logger: Logger;
}

/**
 * A service's real app in-process on port 0, built by `build` on a fresh store of `adapter`;
 * stop() stops the app, then closes the store (dropping its database).
 */
export async function startAppOn<S, A extends StartableApp>(
  service: string,
  adapter: AdapterFactory<S>,
  build: (base: TestAppBase<S>) => A,
) {
  const publisher = new CapturingPublisher();
  const owned = await adapter.create();
  const logger = createLogger(`${service}-test`, 'silent');
  const app = build({ store: owned.store, publisher, tokens: testTokens, logger });
  const server = await app.start(0);
  const stop = async () => {
    await app.stop();
    await owned.close();
  };
  return { app, server, publisher, stop };
}
