import { z } from 'zod';
import { SUBJECT_ID_MAX } from '../contract/wire';

// The public schemas are the contract's (src/contract); these serve the gateway's internal calls.

export const resolveKeyBody = z.strictObject({
  api_key: z.string().max(200),
  tenant_id: z.string().max(200).optional(),
});

export const resolveSubjectBody = z.strictObject({
  tenant_id: z.string().max(200),
  subject_id: z.string().max(SUBJECT_ID_MAX),
});
