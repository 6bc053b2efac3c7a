import { monotonicFactory } from 'ulid';

export type IdPrefix = 'mdt' | 'key' | 'tnt' | 'evt' | 'ras' | 'onb' | 'dec' | 'req';

const nextUlid = monotonicFactory();

/** `prefix_` + a ULID: 48 bits of milliseconds then 80 random bits, so ids sort by creation time. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid().toLowerCase()}`;
}

const ID_PATTERN = /^[a-z]{3}_[0-9a-z]{26}$/;
export function isId(value: string, prefix?: IdPrefix): boolean {
  return ID_PATTERN.test(value) && (prefix === undefined || value.startsWith(`${prefix}_`));
}
