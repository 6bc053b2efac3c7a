import { mandateSchema, type ServedMandate } from '@mandate/mandates';

/**
 * The mandate as verify receives it, from a snapshot or the mandates service's internal read:
 * the mandates contract's schema, checked whole, so a contract drift fails loudly instead of
 * deciding on garbage. Verify owns none of it.
 */
export { MANDATE_STATES, type MandateState } from '@mandate/mandates';
export { mandateSchema };
export type Mandate = ServedMandate;
