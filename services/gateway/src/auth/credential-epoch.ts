import { internalRoutes, type CredentialChange } from '@mandate/identity';
import { type InternalTokens } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { ContractClient, type ServiceClient } from '@mandate/shared/http';
import { CredentialFeedReader } from './credential-feed';

/** A credential cache the epoch check keeps: drops what changed, then is vouched for as of the check. */
export interface CredentialCache {
  /** Drops the answers these changes may have made wrong; null: all of them. */
  drop(changes: CredentialChange[] | null): void;
  /** Every answer still cached is identity's word as of `at` (the start of the check). */
  vouch(at: number): void;
  /** Forgets answers no request used for `idleMs`. */
  forgetUnused(idleMs: number): void;
}

export const isCredentialCache = (x: unknown): x is CredentialCache =>
  typeof (x as Partial<CredentialCache> | undefined)?.drop === 'function';

/** Answers no request used for this long are forgotten (memory only; a request loads one again). */
const FORGET_UNUSED_MS = 10 * 60_000;
/** A failing check or feed is logged at most this often. */
const LOG_FAILURE_EVERY_MS = 10_000;

/**
 * The safety net under the credential push (docs/DECISIONS.md, "Credential changes"). With
 * `feed`, identity's credential feed: one answer held open, a line per tick or change, each
 * dropping what changed and vouching for the rest as of when identity read its epoch (or when the
 * line arrived, if earlier: another host's clock is never trusted ahead of this one). While no line
 * has come for twice the interval — no feed, or one gone silent — one call to identity per interval
 * instead, whatever the number of keys in use: identity answers its credential epoch and what
 * changed since the epoch this gateway saw last; the caches drop that (everything when the list is
 * no longer complete, as on the first check) and are vouched for as of the moment the check began.
 * So a change this gateway's subscription missed — the broker cut, the queue gone — takes effect
 * here within one tick or one interval after the call that made it returned, and while neither
 * answers, cached answers run out after KEY_CACHE_TTL_MS as before.
 */
export class CredentialEpochCheck {
  private readonly identity: ContractClient;
  private epoch: number | undefined;
  private timer?: NodeJS.Timeout;
  private running?: Promise<boolean>;
  private lastForget: number;
  private readonly lastFailureLog = new Map<string, number>();
  private readonly feed?: CredentialFeedReader;

  constructor(
    identity: ServiceClient,
    private readonly tokens: InternalTokens,
    private readonly caches: CredentialCache[],
    private readonly intervalMs: number,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    options: { feed?: boolean } = {},
  ) {
    // Its own failures are its own to log (throttled below), not one line per failed call.
    this.identity = new ContractClient(identity, { name: 'identity', logger });
    this.lastForget = now();
    if (options.feed)
      this.feed = new CredentialFeedReader(
        identity,
        tokens,
        (line, receivedAt) => this.apply(line, Math.min(line.at, receivedAt)),
        () => this.epoch,
        2 * intervalMs,
        (err) => this.warn(err, 'credential feed interrupted: checking the epoch instead until it is back'),
        now,
      );
  }

  /** Whether identity's feed is vouching for the caches (no checks are made meanwhile). */
  get feedLive(): boolean {
    return this.feed?.live ?? false;
  }

  /** The epoch last seen (undefined before the first check succeeded). */
  get seenEpoch(): number | undefined {
    return this.epoch;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (!this.feedLive) void this.check();
    }, this.intervalMs);
    this.timer.unref();
    this.feed?.start();
    void this.check();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.feed?.stop();
  }

  /** One check (a check under way is joined); true when it succeeded. */
  check(): Promise<boolean> {
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(): Promise<boolean> {
    const startedAt = this.now();
    try {
      const requestId = 'credential-check';
      const token = await this.tokens.mint(
        { tenantId: null, actor: { type: 'system' }, permissions: [], requestId },
        'identity',
      );
      const body = this.epoch === undefined ? {} : { since: this.epoch };
      const answer = await this.identity.call(
        internalRoutes.credentialChanges,
        { body },
        { token, requestId },
      );
      if (!answer.ok) throw new Error(`identity refused the credential check (${answer.status})`);
      this.apply(answer.body, startedAt);
    } catch (err) {
      this.warn(err, 'credential check failed: cached credentials expire by KEY_CACHE_TTL_MS');
      return false;
    }
    return true;
  }

  /** A failure of the feed or of the checks, each message logged at most once per LOG_FAILURE_EVERY_MS. */
  private warn(err: unknown, message: string): void {
    const at = this.now();
    if (at - (this.lastFailureLog.get(message) ?? -Infinity) < LOG_FAILURE_EVERY_MS) return;
    this.lastFailureLog.set(message, at);
    this.logger.warn({ err }, message);
  }

  /** Identity's word as of `at`: what changed is dropped, the rest is vouched for. */
  private apply({ epoch, changes }: { epoch: number; changes: CredentialChange[] | null }, at: number): void {
    for (const cache of this.caches) cache.drop(changes);
    this.epoch = epoch;
    for (const cache of this.caches) cache.vouch(at);
    if (at - this.lastForget >= 60_000) {
      this.lastForget = at;
      for (const cache of this.caches) cache.forgetUnused(FORGET_UNUSED_MS);
    }
  }
}
