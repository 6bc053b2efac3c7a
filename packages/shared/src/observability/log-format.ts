import { Writable } from 'node:stream';

/** pino's numeric levels, as a person reads them. */
const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
/** Fields every line has, shown in the line's head or not at all. */
const HEAD = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'v']);

function fieldText(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) ? JSON.stringify(value) : value;
  // An error keeps its message; its stack is in the JSON form (stdout not a terminal).
  if (value && typeof value === 'object' && 'message' in value && 'type' in value)
    return JSON.stringify((value as { message: unknown }).message);
  return JSON.stringify(value);
}

/**
 * One JSON log line (pino's) as a person reads it: `12:04:31.207 WARN  audit: message key=value …`.
 * A line that is not a JSON log line is returned as it is. The launchers use it on a terminal only
 * (docs/CONFIGURATION.md, "The launchers"); logs collected by a machine stay JSON.
 */
export function readableLogLine(line: string, options: { name?: boolean } = {}): string {
  if (!line.startsWith('{')) return line;
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof entry.level !== 'number' || typeof entry.time !== 'number') return line;
  const time = new Date(entry.time).toISOString().slice(11, 23);
  const level = (LEVELS[entry.level] ?? String(entry.level)).padEnd(5);
  const name = options.name !== false && typeof entry.name === 'string' ? `${entry.name}: ` : '';
  const fields = Object.entries(entry)
    .filter(([key]) => !HEAD.has(key))
    .map(([key, value]) => `${key}=${fieldText(value)}`);
  return [`${time} ${level} ${name}${String(entry.msg ?? '')}`, ...fields].join(' ');
}

/** A stream for pino that writes each line readably to `out` (the embedded launcher, on a terminal). */
export function readableLogStream(out: NodeJS.WritableStream = process.stdout): Writable {
  let partial = '';
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop()!;
      for (const line of lines) out.write(readableLogLine(line) + '\n');
      done();
    },
  });
}
