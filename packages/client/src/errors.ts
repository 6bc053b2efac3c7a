/**
 * An answer of the API that is not a 2xx: its status, the error envelope's code and message, and
 * the request id to quote when asking about it (the X-Request-Id the gateway answered with).
 */
export class MandateApiError extends Error {
  override readonly name = 'MandateApiError';
  /** The HTTP status, 400 to 599. */
  readonly status: number;
  /** The envelope's code (BAD_REQUEST, NOT_FOUND, …); UNEXPECTED_RESPONSE when the body was no envelope. */
  readonly error: string;
  /** The X-Request-Id of the answer, when it carried one. */
  readonly requestId: string | undefined;
  /** Seconds the server asked to wait (Retry-After), when it said. */
  readonly retryAfter: number | undefined;

  constructor(init: {
    status: number;
    error: string;
    message: string;
    requestId?: string | undefined;
    retryAfter?: number | undefined;
  }) {
    super(init.message);
    this.status = init.status;
    this.error = init.error;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
  }
}
