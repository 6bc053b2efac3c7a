import { StringDecoder } from 'node:string_decoder';
import { setTimeout as sleep } from 'node:timers/promises';
import { credentialFeedLineSchema, internalRoutes } from '@mandate/identity';
import { INTERNAL_TOKEN_HEADER, type InternalTokens } from '@mandate/shared/core';
import { type ServiceClient } from '@mandate/shared/http';
import type { z } from 'zod';

export type CredentialFeedLine = z.infer<typeof credentialFeedLineSchema>;

/** Reconnecting waits this long at first, doubling up to RETRY_MAX_MS while identity refuses (with jitter). */
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 10_000;
/** A line longer than this is not a line of the feed (1,000 changes are ~80 KiB). */
const MAX_LINE_CHARS = 1 << 20;

/**
 * The gateway's end of identity's credential feed (docs/DECISIONS.md, "Credential changes"): one
 * answer held open to one identity replica, each line handed to `apply` with the time it arrived.
 * It is `live` while lines keep coming within `silenceMs`; a feed silent that long is cut and opened
 * again (on the next replica), as is one that ends (identity stopping, the token running out).
 */
export class CredentialFeedReader {
  private abort?: AbortController;
  private stopped = true;
  private loop?: Promise<void>;
  private lastLineAt = -Infinity;

  constructor(
    private readonly identity: ServiceClient,
    private readonly tokens: InternalTokens,
    /** Called with every line, and when it arrived. */
    private readonly apply: (line: CredentialFeedLine, receivedAt: number) => void,
    /** The epoch the gateway knows, asked for again from there on each reconnect. */
    private readonly epoch: () => number | undefined,
    private readonly silenceMs: number,
    /** Told why a feed ended other than by identity (the caller throttles its log). */
    private readonly failed: (err: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a line arrived within the last `silenceMs` (the caches are being vouched for). */
  get live(): boolean {
    return this.now() - this.lastLineAt <= this.silenceMs;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    let retryMs = RETRY_MIN_MS;
    while (!this.stopped) {
      const { lines, ended } = await this.readOnce();
      if (this.stopped) break;
      // A feed identity ended (its token ran out, identity stopping) is opened again at once; after
      // a failure or a silence the next waits, less long if that one said something.
      retryMs = lines > 0 ? RETRY_MIN_MS : Math.min(retryMs * 2, RETRY_MAX_MS);
      if (!ended) await sleep(retryMs / 2 + (Math.random() * retryMs) / 2, undefined, { ref: false });
    }
  }

  /** Reads one feed until it ends, fails or goes silent: how many lines it gave, and whether identity ended it. */
  private async readOnce(): Promise<{ lines: number; ended: boolean }> {
    const abort = new AbortController();
    this.abort = abort;
    let lines = 0;
    let ended = false;
    let silence: NodeJS.Timeout | undefined;
    const armSilence = () => {
      clearTimeout(silence);
      silence = setTimeout(() => abort.abort(), this.silenceMs);
      silence.unref();
    };
    try {
      const requestId = 'credential-feed';
      const token = await this.tokens.mint(
        { tenantId: null, actor: { type: 'system' }, permissions: [], requestId },
        'identity',
      );
      const since = this.epoch();
      armSilence();
      const { status, body } = await this.identity.hold({
        method: 'GET',
        path: `${internalRoutes.credentialFeed.path}${since === undefined ? '' : `?since=${since}`}`,
        headers: { [INTERNAL_TOKEN_HEADER]: token, 'x-request-id': requestId },
        signal: abort.signal,
      });
      if (status !== 200) {
        for await (const _ of body); // drains it, so the connection is reused
        throw new Error(`identity refused the credential feed (${status})`);
      }
      const decoder = new StringDecoder('utf8');
      let pending = '';
      for await (const chunk of body) {
        pending += decoder.write(chunk);
        for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
          const line = credentialFeedLineSchema.parse(JSON.parse(pending.slice(0, nl)));
          pending = pending.slice(nl + 1);
          const receivedAt = this.now();
          this.lastLineAt = receivedAt;
          lines++;
          armSilence();
          this.apply(line, receivedAt);
        }
        if (pending.length > MAX_LINE_CHARS) throw new Error('credential feed line too long');
      }
      ended = true;
    } catch (err) {
      if (!this.stopped) this.failed(err);
    } finally {
      clearTimeout(silence);
    }
    return { lines, ended };
  }
}
