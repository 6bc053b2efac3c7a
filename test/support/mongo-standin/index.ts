import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

/** Debian's system python: the one `apt-get install python3-mongomock python3-mockupdb` serves. */
export const STANDIN_PYTHON = process.env.MONGO_STANDIN_PYTHON ?? '/usr/bin/python3';
const SCRIPT = path.join(__dirname, 'standin.py');

export interface MongoStandin {
  /** mongodb://127.0.0.1:<port>, for MONGO_URL. */
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts the MongoDB stand-in (test/support/mongo-standin/standin.py) on a free port and waits
 * until it listens. Its stdin is a pipe from this process, so it also ends if this one dies.
 */
export async function startMongoStandin(): Promise<MongoStandin> {
  const child: ChildProcess = spawn(STANDIN_PYTHON, [SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let seen = '';
    const fail = (why: string) =>
      reject(
        new Error(
          `the MongoDB stand-in did not start (${why}); it needs ${STANDIN_PYTHON} with mongomock and mockupdb ` +
            `(apt-get install -y python3-mongomock python3-mockupdb), or set MONGO_URL to a real MongoDB:\n${output.join('')}`,
        ),
      );
    const timer = setTimeout(() => fail('no "listening" line within 15 s'), 15_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      fail(err.message);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(`exited with ${code}`);
    });
    child.stdout!.on('data', (d: Buffer) => {
      seen += d.toString();
      const match = /listening (\d+)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
  });
  child.removeAllListeners('exit');
  return {
    url: `mongodb://127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // Closing stdin is its shutdown signal; SIGKILL if it lingers.
      child.stdin!.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
