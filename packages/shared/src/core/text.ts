import { z } from 'zod';

/**
 * What a label may not contain (docs/API.md, "Hardening"): control characters (Cc), format characters (Cf: the
 * zero-width characters and every bidi control such as U+202E), lone surrogates (Cs), private-use
 * code points (Co) and the line/paragraph separators (Zl, Zp). They render as nothing, reorder
 * what follows or drive terminals, so a name holding them can pass for another name.
 */
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}]/u;

export const PRINTABLE_TEXT_MESSAGE =
  'must contain printable characters only (no control, format or bidi characters)';

/** True when `value` holds printable characters only. */
export function isPrintableText(value: string): boolean {
  return !NOT_PRINTABLE.test(value);
}

/**
 * A string that names a subject, key, tenant or label: normalised to NFC (so "é" typed as one
 * or as two code points is one stored value), then refused (400 naming the field) if any
 * character is not printable. Chain further constraints as usual: `labelText().trim().min(1).max(100)`.
 */
export function labelText(): z.ZodString {
  return z
    .string()
    .overwrite((value) => value.normalize('NFC'))
    .refine(isPrintableText, { message: PRINTABLE_TEXT_MESSAGE });
}
