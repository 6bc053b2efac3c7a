import { Writable } from 'node:stream';
import { createLogger, readableLogLine, readableLogStream, setLogDestination } from '../src/observability';

/** docs/CONFIGURATION.md, "The launchers": readable lines on a terminal, the JSON otherwise. */
describe('readable log lines', () => {
  const line = JSON.stringify({
    level: 40,
    time: Date.UTC(2026, 10, 27, 12, 4, 31, 207),
    pid: 7,
    hostname: 'vm',
    name: 'audit',
    msg: 'webhook deliveries are in memory',
    dir: '/tmp/x y',
    segments: 2,
    err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x' },
  });

  it('when a JSON log line is formatted, then it reads time, level, name, message and the other fields, without pid, hostname or stack', () => {
    expect(readableLogLine(line)).toBe(
      '12:04:31.207 WARN  audit: webhook deliveries are in memory dir="/tmp/x y" segments=2 err="boom"',
    );
    expect(readableLogLine(line, { name: false })).toBe(
      '12:04:31.207 WARN  webhook deliveries are in memory dir="/tmp/x y" segments=2 err="boom"',
    );
  });

  it('when a line is not a JSON log line, then it is returned as it is', () => {
    for (const other of ['config error: PORT: must be …', '{not json', '{"a":1}', ''])
      expect(readableLogLine(other)).toBe(other);
  });

  it('when loggers write through readableLogStream, then each line arrives formatted, and JSON again once the destination is unset', async () => {
    const written: string[] = [];
    const out = new Writable({
      write(chunk: Buffer, _e, done) {
        written.push(chunk.toString());
        done();
      },
    });
    setLogDestination(readableLogStream(out));
    try {
      createLogger('gateway', 'info').info({ port: 8080 }, 'listening');
    } finally {
      setLogDestination(undefined);
    }
    await new Promise((r) => setImmediate(r));
    expect(written).toEqual([
      expect.stringMatching(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}gateway: listening port=8080\n$/),
    ]);
  });
});
