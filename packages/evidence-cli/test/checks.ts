/** Every check of a sound bundle against its pinned keys, in the order verifyBundle answers them, each passed. */
export const EVERY_CHECK_PASSED = [
  ['top-level members', true],
  ['key ids', true],
  ['digest', true],
  ['bundle signature', true],
  ['mandate signature', true],
  // A bundle without the log's proofs (exported before the log) passes, the checker saying so.
  ['log proofs', true],
  ['pinned keys', true],
];

/** The same without trusted keys given: every check but the pinned keys, each passed. */
export const EVERY_UNPINNED_CHECK_PASSED = EVERY_CHECK_PASSED.filter(([check]) => check !== 'pinned keys');

/** A bundle with the log's proofs (docs/API.md#proving-the-log): its checkpoint and every inclusion checked. */
export const EVERY_LOGGED_CHECK_PASSED = EVERY_CHECK_PASSED.flatMap(([check, ok]) =>
  check === 'log proofs'
    ? [
        ['log checkpoint', true],
        ['log proofs', true],
      ]
    : [[check, ok]],
);

/** The same without trusted keys. */
export const EVERY_LOGGED_UNPINNED_CHECK_PASSED = EVERY_LOGGED_CHECK_PASSED.filter(
  ([check]) => check !== 'pinned keys',
);
