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
