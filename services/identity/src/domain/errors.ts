import { AppError } from '@mandate/shared';

/** Domain errors extend AppError so the shared error middleware maps them to the envelope. */
export class TenantNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Tenant not found');
  }
}

export class ApiKeyNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'API key not found');
  }
}

export class RoleAssignmentNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Role assignment not found');
  }
}

/** A lifecycle transition the key's current status does not allow. */
export class KeyTransitionNotAllowed extends AppError {
  constructor(message: string) {
    super('CONFLICT', message);
  }
}

/** The database refused a second active assignment for the same subject in the same tenant. */
export class DuplicateRoleAssignment extends AppError {
  constructor() {
    super('CONFLICT', 'Subject already has an active role assignment in this tenant');
  }
}

/** A unique index refused a write (a duplicate id or key hash); never expected in practice. */
export class DuplicateRecord extends AppError {
  constructor(what: string) {
    super('CONFLICT', `${what} already exists`);
  }
}

/** A rotation while the key's previous successor is still staging (SPEC §5: at most one). */
export class PendingSuccessorExists extends AppError {
  constructor() {
    super('CONFLICT', 'API key already has a staging successor; activate or revoke it first');
  }
}

export class OperatorRequired extends AppError {
  constructor() {
    super('FORBIDDEN', 'Operator credentials required');
  }
}

/** platform_admin and platform:* exist only outside the tenant surface (SPEC §4). */
export class RoleNotAssignable extends AppError {
  constructor(role: string) {
    super('FORBIDDEN', `Role cannot be assigned through the tenant API: ${role}`);
  }
}

/** A role-assignment change its current status does not allow (revoked, or the caller's own). */
export class RoleAssignmentConflict extends AppError {
  constructor(message: string) {
    super('CONFLICT', message);
  }
}

export class OnboardingRequestNotFound extends AppError {
  constructor() {
    super('NOT_FOUND', 'Onboarding request not found');
  }
}

/** Approve or reject of a request that was already decided. */
export class OnboardingAlreadyDecided extends AppError {
  constructor(status: string) {
    super('CONFLICT', `Onboarding request is already ${status.toLowerCase()}`);
  }
}
