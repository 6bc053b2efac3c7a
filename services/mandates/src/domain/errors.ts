import { AppError } from '@mandate/shared/core';

export class MandateNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Mandate not found');
  }
}

export class TransitionNotAllowed extends AppError {
  constructor(message: string) {
    super('CONFLICT', message);
  }
}

/** The signing key (local or KMS) could not sign; nothing is stored without a signature. */
export class SigningUnavailable extends AppError {
  constructor(cause?: unknown) {
    super('SERVICE_UNAVAILABLE', 'Signing service unavailable');
    // Kept for the log line; the client only ever sees the envelope.
    this.cause = cause;
  }
}

/** Optimistic concurrency kept losing to other writers; the client may simply retry. */
export class ConcurrentModification extends AppError {
  constructor() {
    super('CONFLICT', 'Mandate was modified concurrently; retry the request');
  }
}

/**
 * The snapshot fence could not be raised before a lifecycle change, so verify might go on
 * answering from the old state: nothing is changed and the client may retry.
 */
export class SnapshotsUnavailable extends AppError {
  constructor(cause?: unknown) {
    super('SERVICE_UNAVAILABLE', 'Mandate snapshot store unavailable; nothing was changed');
    this.cause = cause;
  }
}
