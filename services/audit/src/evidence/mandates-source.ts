import { internalRoutes, routes } from '@mandate/mandates';
import { AppError, serviceUnavailable } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { type CheckpointClaims } from '@mandate/shared/mandate';
import { ContractClient, type RefusedAnswer } from '@mandate/shared/http';
import type { EvidenceMandate, PublicJwk } from './bundle';

/** Who asks: a token minted for the caller, so the mandates service scopes every read to its tenant. */
export interface CallContext {
  tenantId: string;
  internalToken: string;
  requestId?: string;
}

/** What the evidence export needs from the mandates service. */
export interface MandatesSource {
  /** The mandate as served, or null if absent or another tenant's. */
  getMandate(ctx: CallContext, id: string): Promise<EvidenceMandate | null>;
  /** The published JWKS, the key that signs now first. */
  publicKeys(ctx: CallContext): Promise<PublicJwk[]>;
  /** A JWS over `digest` by the mandates service's signer (local key or KMS). */
  signDigest(ctx: CallContext, digest: string): Promise<{ kid: string; jws: string }>;
  /**
   * A JWS (typ audit-checkpoint+jwt) over a tenant log's checkpoint claims, by the same signer
   * (docs/API.md#proving-the-log). Absent: no checkpoints are signed.
   */
  signCheckpoint?(ctx: CallContext, claims: CheckpointClaims): Promise<{ kid: string; jws: string }>;
  close(): Promise<void>;
}

export interface HttpMandatesSourceOptions {
  /** The mandates service's replicas (MANDATES_URL). */
  baseUrls: string[];
  logger: Logger;
  timeoutMs?: number;
}

/**
 * The mandates service through its contract (ContractClient): every answer is the route's schema,
 * else a logged 503 naming what the export was fetching.
 */
export class HttpMandatesSource implements MandatesSource {
  private readonly mandates: ContractClient;
  private readonly logger: Logger;

  constructor({ baseUrls, logger, timeoutMs = 5_000 }: HttpMandatesSourceOptions) {
    this.logger = logger;
    this.mandates = ContractClient.over(baseUrls, { name: 'mandates', logger, timeoutMs });
  }

  async getMandate(ctx: CallContext, id: string): Promise<EvidenceMandate | null> {
    const answer = await fetching('mandate', () =>
      this.mandates.call(internalRoutes.readMandate, { params: { id } }, context(ctx)),
    );
    if (answer.status === 404) return null;
    if (!answer.ok) throw this.refused(ctx, 'mandate', answer);
    // The token already scopes the read; another tenant's mandate must still never be exported.
    return answer.body.tenant_id === ctx.tenantId ? answer.body : null;
  }

  async publicKeys(ctx: CallContext): Promise<PublicJwk[]> {
    const answer = await fetching('keys', () => this.mandates.call(routes.getJwks, {}, context(ctx)));
    if (!answer.ok) throw this.refused(ctx, 'keys', answer);
    return answer.body.keys;
  }

  async signDigest(ctx: CallContext, digest: string): Promise<{ kid: string; jws: string }> {
    const answer = await fetching('signature', () =>
      this.mandates.call(internalRoutes.signEvidenceDigest, { body: { digest } }, context(ctx)),
    );
    if (!answer.ok) throw this.refused(ctx, 'signature', answer);
    return answer.body;
  }

  async signCheckpoint(ctx: CallContext, claims: CheckpointClaims): Promise<{ kid: string; jws: string }> {
    const answer = await fetching('checkpoint signature', () =>
      this.mandates.call(internalRoutes.signAuditCheckpoint, { body: claims }, context(ctx)),
    );
    if (!answer.ok) throw this.refused(ctx, 'checkpoint signature', answer);
    return answer.body;
  }

  close(): Promise<void> {
    return this.mandates.close();
  }

  /** A refusal the export cannot act on (a 401 means the services disagree on the secret): logged, 503. */
  private refused(ctx: CallContext, what: string, answer: RefusedAnswer) {
    this.logger.warn(
      { status: answer.status, error: answer.body.error, requestId: ctx.requestId, what },
      'mandates service refused the call',
    );
    return unavailable(what);
  }
}

const context = (ctx: CallContext) => ({ token: ctx.internalToken, requestId: ctx.requestId });
const unavailable = (what: string) => serviceUnavailable(`Mandates service unavailable (${what})`);

/** The client's 503 (already logged), its message naming what the export was fetching. */
async function fetching<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof AppError && err.code === 'SERVICE_UNAVAILABLE') throw unavailable(what);
    throw err;
  }
}
