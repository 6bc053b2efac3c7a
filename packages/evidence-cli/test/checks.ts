/** Every check of a sound bundle against its pinned keys, in the order verifyBundle answers them, each passed. */
export const EVERY_CHECK_PASSED = [
  ['top-level members', true],
  ['key ids', true],
  ['digest', true],
  ['bundle signature', true],
  ['mandate signature', true],
  ['pinned keys', true],
];

/** The same without trusted keys given: every check but the pinned keys, each passed. */
export const EVERY_UNPINNED_CHECK_PASSED = EVERY_CHECK_PASSED.filter(([check]) => check !== 'pinned keys');
