import { MandateApiError } from './api';

/** What an error code means to the person at the dashboard; the API's own message follows it. */
const SENTENCES: Record<string, string> = {
  BAD_REQUEST: 'Some of what was entered is not accepted.',
  UNAUTHORIZED: 'Your sign-in is not accepted any more: sign in again.',
  FORBIDDEN: 'Your role does not allow this.',
  NOT_FOUND: 'This does not exist (or not in this tenant).',
  CONFLICT: 'This cannot be done in its current state.',
  TOO_MANY_REQUESTS: 'Too many requests just now: wait a moment and try again.',
  PAYLOAD_TOO_LARGE: 'What was sent is too large.',
  METHOD_NOT_ALLOWED: 'The service does not offer this operation here.',
  SERVICE_UNAVAILABLE: 'The service is briefly unavailable: try again in a moment.',
  INTERNAL_ERROR: 'Something went wrong on the service side: try again, and tell your operator if it lasts.',
  ALREADY_ANSWERED: 'This request has already been answered.',
};

export interface ErrorInWords {
  /** The sentence: what happened, in words. */
  sentence: string;
  /** The detail: the API's message (which field, which limit), or the browser's. */
  detail?: string;
  /** The code underneath: "400 BAD_REQUEST". */
  code?: string;
}

/** An error as a sentence, the API's message as its detail, and the code underneath. */
export function errorInWords(error: unknown): ErrorInWords {
  if (error instanceof MandateApiError)
    return {
      sentence: SENTENCES[error.error] ?? `The service refused the request (${error.status}).`,
      detail: error.message,
      code: `${error.status} ${error.error}`,
    };
  if (error instanceof TypeError)
    return { sentence: 'The service could not be reached: check the connection.', detail: error.message };
  return { sentence: error instanceof Error ? error.message : String(error) };
}

/** POST /v1/verify's (and AuthZEN's) reasons in words. */
export const VERIFY_REASONS: Record<string, string> = {
  OK: 'The mandate allows this action now.',
  MANDATE_SUSPENDED: 'The mandate is suspended: it allows nothing until it is reactivated.',
  MANDATE_REVOKED: 'The mandate is revoked: it allows nothing any more.',
  MANDATE_EXPIRED: 'The mandate has expired.',
  MANDATE_NOT_YET_VALID: 'The mandate is not valid yet (its validity starts later).',
  DELEGATE_MISMATCH: 'The delegate named is not the one this mandate was given to.',
  PRINCIPAL_NOT_VERIFIED: "The principal's identity was not verified, and a minimum assurance was asked.",
  ASSURANCE_TOO_LOW: "The principal's identity was verified at a lower assurance than asked.",
  ACTION_NOT_PERMITTED: "The action is not among the mandate's actions.",
  RESOURCE_NOT_PERMITTED: "The resource is not among the mandate's resources.",
  AMOUNT_REQUIRED: 'The mandate limits the amount: the request must name one (with its currency).',
  CURRENCY_MISMATCH: "The currency differs from the mandate's.",
  AMOUNT_EXCEEDS_LIMIT: "The amount is above the mandate's limit.",
  BUDGET_EXCEEDED: "The amount would take the mandate's budget for the period past its limit.",
  // AuthZEN's answer for a mandate the tenant does not have (docs/API.md#authzen): verify's 404.
  MANDATE_NOT_FOUND: 'No such mandate in this tenant.',
};
