import { internalRoutes } from '@mandate/mandates';
import { serviceUnavailable } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { ContractClient, type RetryPolicy } from '@mandate/shared/http';
import type { Mandate } from '../domain/mandate';
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

/**
 * Reads mandates through the mandates contract's internal read with a token minted for the caller
 * (same tenant, actor and permissions): the mandates service takes the tenant from it, so verify
 * never widens the scope of a read. The answer is the contract's mandate or a logged 503.
 */
export class HttpMandateReader implements MandateReader {
  private readonly mandates: ContractClient;
  private readonly metrics?: VerifyMetrics;

  constructor(options: HttpMandateReaderOptions) {
    this.metrics = options.metrics;
    this.mandates = ContractClient.over(options.baseUrls, {
      name: 'mandates',
      logger: options.logger,
      timeoutMs: options.timeoutMs ?? 2_000,
      retryPolicy: options.retryPolicy,
    });
  }

  async get(ctx: ReadContext, mandateId: string): Promise<Mandate | null> {
    if (this.metrics) this.metrics.mandatesReads++;
    const answer = await this.mandates.call(
      internalRoutes.readMandate,
      { params: { id: mandateId } },
      { token: ctx.internalToken, requestId: ctx.requestId },
    );
    if (!answer.ok) return null;
    // Belt and braces: the token already scopes the read, but another tenant's mandate must never be decided on.
    return answer.body.tenant_id === ctx.tenantId ? answer.body : null;
  }

  async budgetAvailable(ctx: ReadContext, mandateId: string): Promise<number> {
    const answer = await this.mandates.call(
      internalRoutes.readBudget,
      { params: { id: mandateId } },
      { token: ctx.internalToken, requestId: ctx.requestId },
    );
    if (!answer.ok) throw serviceUnavailable('Budget could not be read; retry later');
    return answer.body.available;
  }

  check(): Promise<string> {
    return this.mandates.check();
  }

  close(): Promise<void> {
    return this.mandates.close();
  }
}
