import { z } from 'zod';
import {
  INTERNAL_TOKEN_HEADER,
  ServiceClient,
  parseUpstreamJson,
  serviceUnavailable,
  type Logger,
} from '@mandate/shared';
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
  close(): Promise<void>;
}

const mandateShape = z.looseObject({
  id: z.string(),
  tenant_id: z.string(),
  signature: z.looseObject({ alg: z.string(), kid: z.string(), jws: z.string() }),
});
const jwksShape = z.object({ keys: z.array(z.looseObject({ kid: z.string().optional() })) });
const signatureShape = z.object({ alg: z.string(), kid: z.string(), jws: z.string() });

export interface HttpMandatesSourceOptions {
  /** The mandates service's replicas (MANDATES_URL). */
  baseUrls: string[];
  logger: Logger;
  timeoutMs?: number;
}

const unavailable = (what: string) => serviceUnavailable(`Mandates service unavailable (${what})`);

/** Talks to the mandates service over its internal API, with the kernel client's retries. */
export class HttpMandatesSource implements MandatesSource {
  private readonly client: ServiceClient;
  private readonly logger: Logger;
  private readonly timeoutMs: number;

  constructor(options: HttpMandatesSourceOptions) {
    this.client = new ServiceClient(options.baseUrls);
    this.logger = options.logger;
    this.timeoutMs = options.timeoutMs ?? 5_000;
  }

  async getMandate(ctx: CallContext, id: string): Promise<EvidenceMandate | null> {
    const res = await this.call(ctx, 'mandate', {
      method: 'GET',
      path: `/internal/v1/mandates/${encodeURIComponent(id)}`,
    });
    if (res.status === 404) return null;
    const mandate = this.parse(ctx, 'mandate', res, mandateShape) as EvidenceMandate;
    // The token already scopes the read; another tenant's mandate must still never be exported.
    return mandate.tenant_id === ctx.tenantId ? mandate : null;
  }

  async publicKeys(ctx: CallContext): Promise<PublicJwk[]> {
    const res = await this.call(ctx, 'keys', { method: 'GET', path: '/v1/.well-known/jwks.json' });
    return this.parse(ctx, 'keys', res, jwksShape).keys;
  }

  async signDigest(ctx: CallContext, digest: string): Promise<{ kid: string; jws: string }> {
    const res = await this.call(ctx, 'signature', {
      method: 'POST',
      path: '/internal/v1/signatures',
      body: JSON.stringify({ digest }),
      // Signing a digest changes nothing, so a retry is safe.
      idempotent: true,
    });
    return this.parse(ctx, 'signature', res, signatureShape);
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  private async call(
    ctx: CallContext,
    what: string,
    req: { method: string; path: string; body?: string; idempotent?: boolean },
  ): Promise<{ status: number; body: Buffer }> {
    const headers: Record<string, string> = {
      [INTERNAL_TOKEN_HEADER]: ctx.internalToken,
      accept: 'application/json',
    };
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    if (ctx.requestId) headers['x-request-id'] = ctx.requestId;
    try {
      return await this.client.request({ ...req, headers, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      this.logger.warn({ err, requestId: ctx.requestId, what }, 'mandates service unreachable');
      throw unavailable(what);
    }
  }

  private parse<T>(
    ctx: CallContext,
    what: string,
    res: { status: number; body: Buffer },
    schema: z.ZodType<T>,
  ): T {
    if (res.status !== 200) {
      this.logger.warn(
        { status: res.status, requestId: ctx.requestId, what },
        'mandates service answered with an error',
      );
      throw unavailable(what);
    }
    const parsed = parseUpstreamJson(res.body, schema);
    if (!parsed?.success) {
      this.logger.error(
        { requestId: ctx.requestId, what, issues: parsed?.error.issues },
        'mandates service returned an unexpected body',
      );
      throw unavailable(what);
    }
    return parsed.data;
  }
}
