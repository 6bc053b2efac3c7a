import type { z } from 'zod';

/**
 * A route that answers one resource (200, `item`) or 404: what the answer is and what "not found"
 * means for this route (the read of one thing by its id, and the writes that answer it).
 */
export const oneOrNotFound = <const T extends z.ZodType>(description: string, item: T, notFound: string) => ({
  responses: { 200: { description, schema: item } },
  errors: { 404: notFound },
});
