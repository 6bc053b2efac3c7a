/**
 * `@mandate/test-wallet`: the two outside parties of a wallet identity verification, for
 * development and tests only — a TEST PID provider and a wallet that can misbehave on purpose.
 * No service imports it (identity trusts the TEST issuer by its public key alone); the launchers,
 * the test wallet CLI and the tests do.
 */
export * from './pid-issuer';
export * from './wallet';
