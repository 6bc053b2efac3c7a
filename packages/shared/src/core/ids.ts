import { randomFillSync } from 'node:crypto';

/** `whe` a webhook endpoint, `whd` one delivery of an event to an endpoint, `sau` a spend authorization. */
export type IdPrefix =
  'mdt' | 'key' | 'tnt' | 'evt' | 'ras' | 'onb' | 'dec' | 'req' | 'idv' | 'whe' | 'whd' | 'sau';

/** Crockford base32, lowercase (ids are lowercase). */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const RANDOM_CHARS = 16;

// Random bytes come from a pool refilled 4 KiB at a time (one getrandom call per ~250 new
// milliseconds), instead of one crypto call per character as ulid's factory did.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

let lastTime = -1;
let lastTimeChars = '';
/** The 80 random bits of the last id, one base32 digit (0–31) per entry. */
const lastRandom = new Uint8Array(RANDOM_CHARS);

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32]! + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

function freshRandom(): void {
  if (poolOffset + RANDOM_CHARS > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  // 256 is a multiple of 32, so the low 5 bits of a random byte are uniform.
  for (let i = 0; i < RANDOM_CHARS; i++) lastRandom[i] = pool[poolOffset + i]! & 31;
  poolOffset += RANDOM_CHARS;
}

/** Adds one to the random part; false when it was all ones (2^80 ids in one millisecond). */
function incrementRandom(): boolean {
  for (let i = RANDOM_CHARS - 1; i >= 0; i--) {
    if (lastRandom[i]! < 31) {
      lastRandom[i]!++;
      return true;
    }
    lastRandom[i] = 0;
  }
  return false;
}

/**
 * `prefix_` + a ULID in lowercase: 48 bits of milliseconds then 80 random bits (26 Crockford base32
 * characters), so ids sort by creation time. Monotonic within the process like ulid's
 * monotonicFactory: ids made in the same millisecond (or while the clock stands behind the last
 * id's) add one to the previous random part, so they still sort in creation order.
 */
export function newId(prefix: IdPrefix): string {
  const now = Date.now();
  if (now > lastTime) {
    lastTime = now;
    lastTimeChars = encodeTime(now);
    freshRandom();
  } else if (!incrementRandom()) {
    // The random part overflowed: move on to the next millisecond rather than repeat an id.
    lastTime += 1;
    lastTimeChars = encodeTime(lastTime);
    freshRandom();
  }
  let random = '';
  for (let i = 0; i < RANDOM_CHARS; i++) random += ALPHABET[lastRandom[i]!];
  return `${prefix}_${lastTimeChars}${random}`;
}

const ID_PATTERN = /^[a-z]{3}_[0-9a-z]{26}$/;
export function isId(value: string, prefix?: IdPrefix): boolean {
  return ID_PATTERN.test(value) && (prefix === undefined || value.startsWith(`${prefix}_`));
}
