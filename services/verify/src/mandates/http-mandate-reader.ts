import {
  INTERNAL_TOKEN_HEADER,
  ServiceClient,
  parseUpstreamJson,
  serviceUnavailable,
  type Logger,
  type RetryPolicy,
} from '@mandate/shared';
import { mandateSchema, type Mandate } from '../domain/mandate';
import type { VerifyMetrics } from '../metrics';
import type { MandateReader, ReadContext } from './mandate-reader';

export interface HttpMandateReaderOptions {
  /** The mandates service's replicas (MANDATES_URL). */
  baseUrls: string[];
  logger: Logger;
  /** Upper bound for one read, retries included. */
  timeoutMs?: number;
  retryPolicy?: RetryPolicy;
  metrics?: VerifyMetrics;
}

const unavailable = () => serviceUnavailable('Mandates service unavailable');

/**
 * Reads mandates from the mandates service's internal route with a token minted for the caller
 * (same tenant, actor and permissions): the mandates service takes the tenant from it, so verify
 * never widens the scope of a read.
 */
export class HttpMandateReader implements MandateReader {
  private readonly client: ServiceClient;
  private readonly logger: Logger;
  private readonly timeoutMs: number;
  private readonly metrics?: VerifyMetrics;

  constructor(options: HttpMandateReaderOptions) {
    this.metrics = options.metrics;
    this.client = new ServiceClient(options.baseUrls, options.retryPolicy);
    this.logger = options.logger;
    this.timeoutMs = options.timeoutMs ?? 2_000;
  }

  async get(ctx: ReadContext, mandateId: string): Promise<Mandate | null> {
    const headers: Record<string, string> = {
      [INTERNAL_TOKEN_HEADER]: ctx.internalToken,
      accept: 'application/json',
    };
    if (ctx.requestId) headers['x-request-id'] = ctx.requestId;
    let res;
    if (this.metrics) this.metrics.mandatesReads++;
    try {
      res = await this.client.request({
        method: 'GET',
        path: `/internal/v1/mandates/${encodeURIComponent(mandateId)}`,
        headers,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      this.logger.warn({ err, requestId: ctx.requestId }, 'mandates service unreachable');
      throw unavailable();
    }
    if (res.status === 404) return null;
    if (res.status !== 200) {
      this.logger.warn(
        { status: res.status, requestId: ctx.requestId },
        'mandates service answered with an error',
      );
      throw unavailable();
    }
    const parsed = parseUpstreamJson(res.body, mandateSchema);
    if (!parsed?.success) {
      // A contract drift between the services: fail the request rather than decide on a guess.
      this.logger.error(
        { requestId: ctx.requestId, issues: parsed?.error.issues },
        'mandates service returned an invalid mandate',
      );
      throw unavailable();
    }
    // Belt and braces: the token already scopes the read, but another tenant's mandate must never be decided on.
    if (parsed.data.tenant_id !== ctx.tenantId) return null;
    return parsed.data;
  }

  async check(): Promise<string> {
    try {
      const res = await this.client.request({
        method: 'GET',
        path: '/healthz',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      return res.status === 200 ? 'ok' : `mandates /healthz answered ${res.status}`;
    } catch (err) {
      return `mandates unreachable: ${(err as Error).message}`;
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
