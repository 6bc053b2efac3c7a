import { AppError } from '@mandate/shared/core';

/**
 * A lookup's answer, or null where the single lookup route would answer 404: the resolve-many
 * routes answer each item in its place. Any other failure fails the whole call.
 */
export async function orNull<T>(answer: Promise<T>): Promise<T | null> {
  try {
    return await answer;
  } catch (err) {
    if (err instanceof AppError && err.status === 404) return null;
    throw err;
  }
}
