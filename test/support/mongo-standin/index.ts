import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { mongo } from 'mongoose';

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
  let onStartExit: ((code: number | null) => void) | undefined;
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
    onStartExit = (code) => {
      clearTimeout(timer);
      fail(`exited with ${code}`);
    };
    child.once('exit', onStartExit);
    child.stdout!.on('data', (d: Buffer) => {
      seen += d.toString();
      const match = /listening (\d+)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
  });
  // Only the start's own listener: `exited` must still resolve when stop() ends the process.
  child.off('exit', onStartExit!);
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

/** The services that hold a Mongo adapter. */
export const MONGO_SERVICES = ['mandates', 'identity', 'audit'] as const;
export type MongoService = (typeof MONGO_SERVICES)[number];

export interface MongoStackEnv {
  /** Per service: MONGO_URL and a database of its own (MONGO_DB), for startStack's extraEnv. */
  env: Record<MongoService, Record<string, string>>;
  /** Drops the databases (call after the processes stopped). */
  drop(): Promise<void>;
}

/**
 * Environment that makes mandates, identity and audit use their Mongo adapters against MONGO_URL
 * (the stand-in jest's globalSetup started, or a real MongoDB), each in a fresh database.
 */
export function mongoStackEnv(label: string): MongoStackEnv {
  const url = process.env.MONGO_URL;
  if (!url) throw new Error('MONGO_URL is not set: jest.config.js globalSetup starts the MongoDB stand-in');
  const suffix = `${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const database = (service: MongoService) => `${label}_${service}_${suffix}`;
  const env = {
    mandates: { MONGO_URL: url, MONGO_DB: database('mandates') },
    identity: { MONGO_URL: url, MONGO_DB: database('identity') },
    audit: { MONGO_URL: url, MONGO_DB: database('audit') },
  };
  return {
    env,
    async drop() {
      const client = new mongo.MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
      try {
        await client.connect();
        for (const service of MONGO_SERVICES) await client.db(database(service)).dropDatabase();
      } finally {
        await client.close();
      }
    },
  };
}
