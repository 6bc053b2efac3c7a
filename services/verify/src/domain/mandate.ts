import { z } from 'zod';
import { MANDATE_STATES } from '../contract';

/**
 * The mandate as verify receives it from the mandates service. Verify owns none of it: it is
 * parsed loosely (fields verify does not read pass through) but every field a decision depends
 * on is checked, so a contract drift fails loudly instead of deciding on garbage.
 */
export { MANDATE_STATES, type MandateState } from '../contract';

const timestamp = z.iso.datetime({ offset: true });

export const mandateSchema = z.looseObject({
  id: z.string().min(1),
  tenant_id: z.string().min(1),
  // principal.verified: the wallet verification the mandate's signature covers (min_assurance reads it).
  principal: z.looseObject({ verified: z.looseObject({ assurance: z.string() }).nullish() }).optional(),
  delegate: z.looseObject({ id: z.string() }),
  scope: z.looseObject({
    actions: z.array(z.string()),
    resources: z.array(z.string()).nullish(),
    constraints: z
      .looseObject({
        max_amount: z.number().int().nullish(),
        currency: z.string().nullish(),
      })
      .nullish(),
  }),
  state: z.enum(MANDATE_STATES),
  valid_from: timestamp.nullish(),
  expires_at: timestamp.nullish(),
  version: z.number().int(),
});
export type Mandate = z.infer<typeof mandateSchema>;
