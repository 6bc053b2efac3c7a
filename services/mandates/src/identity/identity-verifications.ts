import { internalRoutes } from '@mandate/identity';
import {
  AppError,
  conflict,
  notFound,
  serviceUnavailable,
  type CallerContext,
  type InternalTokens,
} from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { ContractClient } from '@mandate/shared/http';
import type { IdentityVerifications } from '../domain/mandates';

/**
 * Calls identity's consume route (its contract, through ContractClient) with a token minted for
 * identity carrying the caller (its tenant, actor and permissions), so identity takes the tenant
 * from it, never from mandates. Identity's refusals become the mandate request's, in its fields.
 */
export class HttpIdentityVerifications implements IdentityVerifications {
  private readonly identity: ContractClient;
  constructor(
    baseUrls: string[],
    private readonly tokens: InternalTokens,
    logger: Logger,
    timeoutMs = 3_000,
  ) {
    this.identity = ContractClient.over(baseUrls, { name: 'identity', logger, timeoutMs });
  }

  async consume(caller: CallerContext, verificationId: string, mandateId: string, principalName?: string) {
    const answer = await this.identity.call(
      internalRoutes.consumeIdentityVerification,
      {
        params: { id: verificationId },
        body: {
          mandate_id: mandateId,
          ...(principalName === undefined ? {} : { principal_name: principalName }),
        },
      },
      { token: await this.tokens.mint(caller, 'identity'), requestId: caller.requestId },
    );
    if (answer.ok) return answer.body;
    const { message } = answer.body;
    if (answer.status === 404) throw notFound('principal.verification_id: identity verification not found');
    if (answer.status === 409) throw conflict(`principal.verification_id: ${message}`);
    // The name check answers about principal.name, in identity's words (which never name the verified name).
    if (answer.status === 400 && message.startsWith('principal.name '))
      throw new AppError('BAD_REQUEST', message);
    if (answer.status === 400) throw new AppError('BAD_REQUEST', `principal.verification_id: ${message}`);
    throw serviceUnavailable('Identity service unavailable');
  }

  close(): Promise<void> {
    return this.identity.close();
  }
}
