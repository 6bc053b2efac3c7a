/**
 * `npx tsx bench/idle-cost.ts` — what each service process of `npm run start:services` spends with
 * no request at all: CPU ms per second and main-thread wake-ups per second (voluntary context
 * switches), over 10 s after 15 s of rest. Work a process does beside its requests competes with
 * them for the same cores (docs/PERFORMANCE.md, round 10).
 */
import { startStack } from '../test/support/stack';
import { cpuTicks, wakeUps } from './proc-stats';

const SECONDS = 10;
/** CPU ticks, user and system together. */
const ticks = (pid: number) => cpuTicks(pid).reduce((a, b) => a + b, 0);

async function main() {
  const stack = await startStack({ all: { LOG_LEVEL: 'warn' } }, { replicas: { verify: 2 } });
  try {
    await new Promise((r) => setTimeout(r, 15_000));
    const processes = [
      ['gateway', stack.gateway.child.pid!] as const,
      ...Object.entries(stack.replicas).flatMap(([name, replicas]) =>
        replicas.map((p, i) => [replicas.length > 1 ? `${name}${i + 1}` : name, p.child.pid!] as const),
      ),
    ];
    const before = processes.map(([, pid]) => [ticks(pid), wakeUps(pid)] as const);
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    processes.forEach(([name, pid], i) => {
      const cpuMsPerSecond = ((ticks(pid) - before[i]![0]) * 10) / SECONDS;
      const wakeUpsPerSecond = (wakeUps(pid) - before[i]![1]) / SECONDS;
      process.stdout.write(
        `${name}: ${cpuMsPerSecond.toFixed(1)} ms CPU/s, ${wakeUpsPerSecond} wake-ups/s\n`,
      );
    });
  } finally {
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
