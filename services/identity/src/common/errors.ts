import { AppError } from '@mandate/shared/core';

/**
 * Errors every aggregate may raise. Each aggregate's own errors live with its rules; all extend
 * AppError so the shared error middleware maps them to the envelope.
 */

/** A unique index refused a write (a duplicate id or key hash); never expected in practice. */
export class DuplicateRecord extends AppError {
  constructor(what: string) {
    super('CONFLICT', `${what} already exists`);
  }
}

/** A guarded write kept losing to concurrent writes of the same record. */
export class ConcurrentModification extends AppError {
  constructor(what: string) {
    super('CONFLICT', `${what} was modified concurrently; retry the request`);
  }
}

export class OperatorRequired extends AppError {
  constructor() {
    super('FORBIDDEN', 'Operator credentials required');
  }
}
