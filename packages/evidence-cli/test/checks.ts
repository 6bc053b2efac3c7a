/** Every check of a sound bundle against its pinned keys, in the order verifyBundle answers them, each passed. */
export const EVERY_CHECK_PASSED = [
  ['top-level members', true],
  ['key ids', true],
  ['digest', true],
  ['bundle signature', true],
  ['mandate signature', true],
  ['pinned keys', true],
];
