import type { InternalTokens } from '@mandate/shared/core';
import type { CheckpointSigner } from '../domain/log';
import type { MandatesSource } from './mandates-source';

/** Signs a tenant's checkpoints through the mandates service, as that tenant's own system call. */
export function checkpointSigner(
  mandates: MandatesSource,
  tokens: InternalTokens,
): ((tenantId: string) => CheckpointSigner) | undefined {
  if (!mandates.signCheckpoint) return undefined;
  return (tenantId) => async (claims) => {
    const internalToken = await tokens.mint(
      { tenantId, actor: { type: 'system' }, permissions: [], requestId: 'audit-checkpoint' },
      'mandates',
    );
    const { jws } = await mandates.signCheckpoint!({ tenantId, internalToken }, claims);
    return jws;
  };
}
