// Scope pattern matching is part of the decision module shared with the offline verifier.
export { actionMatches, anyMatches, resourceMatches } from '@mandate/verifier/decide';
