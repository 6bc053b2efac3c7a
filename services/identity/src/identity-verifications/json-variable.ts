import type { z } from 'zod';

/**
 * A configuration variable holding a JSON list: unset or blank is the empty list; text that is not
 * JSON is refused with `notJson()`, and a value the schema refuses with `invalid(its first issue)`,
 * so the operator reads which variable, and where in it, is wrong.
 */
export function parseJsonListVariable<S extends z.ZodType<unknown[]>>(
  raw: string | undefined,
  schema: S,
  refuse: { notJson: () => Error; invalid: (issue: z.core.$ZodIssue | undefined) => Error },
): z.output<S> {
  if (raw === undefined || raw.trim() === '') return [] as z.output<S>;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw refuse.notJson();
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw refuse.invalid(parsed.error.issues[0]);
  return parsed.data;
}
