import {
  AppError,
  INTERNAL_TOKEN_HEADER,
  ServiceClient,
  conflict,
  notFound,
  serviceUnavailable,
  type CallerContext,
  type InternalTokens,
  type Logger,
} from '@mandate/shared';
import { z } from 'zod';
import { principalVerificationSchema } from '../contract';
import type { IdentityVerifications } from '../domain/mandates';

/** Identity's answer: the verification's result and the name it vouches for (the principal's name). */
const consumedSchema = principalVerificationSchema
  .omit({ method: true })
  .extend({ principal_name: z.string().min(1) });
const envelope = z.object({ error: z.string(), message: z.string() });

/**
 * Calls identity's internal consume route with a token minted for identity carrying the caller
 * (its tenant, actor and permissions), so identity takes the tenant from it, never from mandates.
 */
export class HttpIdentityVerifications implements IdentityVerifications {
  private readonly client: ServiceClient;
  constructor(
    baseUrls: string[],
    private readonly tokens: InternalTokens,
    private readonly logger: Logger,
    private readonly timeoutMs = 3_000,
  ) {
    this.client = new ServiceClient(baseUrls);
  }

  async consume(caller: CallerContext, verificationId: string, mandateId: string, principalName?: string) {
    let res;
    try {
      res = await this.client.request({
        method: 'POST',
        path: `/internal/v1/identity-verifications/${encodeURIComponent(verificationId)}/consume`,
        headers: {
          [INTERNAL_TOKEN_HEADER]: await this.tokens.mint(caller, 'identity'),
          'content-type': 'application/json',
          'x-request-id': caller.requestId,
        },
        body: Buffer.from(
          JSON.stringify({
            mandate_id: mandateId,
            ...(principalName === undefined ? {} : { principal_name: principalName }),
          }),
        ),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      this.logger.warn({ err, requestId: caller.requestId }, 'identity service unreachable');
      throw serviceUnavailable('Identity service unavailable');
    }
    const json = safeJson(res.body);
    if (res.status === 200) {
      const parsed = consumedSchema.safeParse(json);
      if (parsed.success) return parsed.data;
      this.logger.error({ requestId: caller.requestId }, 'identity answered an invalid verification');
      throw serviceUnavailable('Identity service unavailable');
    }
    const message = envelope.safeParse(json).data?.message;
    if (res.status === 404) throw notFound('principal.verification_id: identity verification not found');
    if (res.status === 409) throw conflict(`principal.verification_id: ${message ?? 'not usable'}`);
    // The name check answers about principal.name, in identity's words (which never name the verified name).
    if (res.status === 400 && message?.startsWith('principal.name '))
      throw new AppError('BAD_REQUEST', message);
    if (res.status === 400)
      throw new AppError('BAD_REQUEST', `principal.verification_id: ${message ?? 'invalid'}`);
    throw serviceUnavailable('Identity service unavailable');
  }
}

function safeJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
