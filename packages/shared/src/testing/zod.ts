import { describeZodError } from '../core/errors';

/** What a request schema says of `input`: 'accepted', or the 400's message as the API words it. */
export function validationMessage(
  schema: { safeParse(v: unknown): { success: boolean; error?: unknown } },
  input: unknown,
): string {
  const r = schema.safeParse(input);
  return r.success ? 'accepted' : describeZodError(r.error as never);
}
