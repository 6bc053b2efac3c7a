import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

export interface ScriptProcess {
  child: ChildProcess;
  /** What it has printed so far, stdout and stderr as they arrived, in complete lines. */
  lines: string[];
  exited: Promise<number | null>;
  /** SIGTERM unless it has exited already, then waits for the exit. */
  stop(): Promise<void>;
}

/**
 * Runs a script of this repository as its npm script does (node --import tsx), from the root and
 * with only PATH and `env`, and resolves once what it printed satisfies `ready`. One that exits
 * first, or is not ready within 120 s (six processes compiling on a loaded machine), is killed; the error names it (`what`) and holds its output.
 */
export async function startScript(
  script: string,
  env: Record<string, string>,
  ready: (lines: string[]) => boolean,
  what: string,
): Promise<ScriptProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script)], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let partial = '';
  const onData = (d: Buffer) => {
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started = Date.now();
  const deadline = started + 120_000;
  while (!ready(lines)) {
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      // How it ended says which: an exit (its code or signal) or the deadline, and whether it printed at all.
      const ended =
        child.exitCode !== null || child.signalCode !== null
          ? `exited (code ${child.exitCode}, signal ${child.signalCode})`
          : 'still running at the deadline';
      child.kill('SIGKILL');
      throw new Error(
        `${what} did not start: ${ended} after ${Math.round((Date.now() - started) / 1000)} s, ` +
          `${lines.length} line(s) printed${partial ? ' and a partial one' : ''}:\n${[...lines, partial].join('\n')}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    lines,
    exited,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Runs a script (a service's main.ts, a launcher) under tsx with only PATH and `env`, to its exit;
 * what it printed on stdout and stderr, in lines.
 */
export function runToExit(
  script: string,
  env: Record<string, string>,
): Promise<{ code: number | null; lines: string[] }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script)], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    // 'close', not 'exit': every line it printed has been read by then.
    child.once('close', (code) => resolve({ code, lines: out.split('\n').filter(Boolean) }));
  });
}
