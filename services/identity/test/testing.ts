/**
 * `@mandate/identity/testing`: what the tests and benchmarks outside this service assemble an
 * identity service from in-process. Nothing else outside identity reaches into its src.
 */
export { createApp, type IdentityApp } from '../src/app';
export { MemoryIdentityStore } from '../src/store/memory-identity-store';
export { assignRoles } from '../src/role-assignments/role-assignments';
// The Mongo schemas and the queries they serve, for the index-coverage test.
export {
  IDENTITY_GUARD_SCHEMAS,
  IDENTITY_QUERY_SHAPES,
  IDENTITY_SCHEMAS,
} from '../src/store/mongo-identity-store';
