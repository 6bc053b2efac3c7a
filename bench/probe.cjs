/* global require, process */
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS preload, run by node itself */
// Preloaded into gateway and verify by bench/verify.ts (`--cpu-prof` is not allowed in
// NODE_OPTIONS on Node 20). Each SIGUSR2 toggles a measurement window, so the figures cover the
// measured load only:
// - always: event-loop delay (perf_hooks.monitorEventLoopDelay, sampled every
//   BENCH_LOOP_RESOLUTION_MS, default 10) and event-loop utilisation, written as
//   <BENCH_PROBE_DIR>/<service>-<pid>-<n>.loop.json at the end of window n;
// - with BENCH_PROFILE_DIR: a V8 CPU profile of the first window, <dir>/<service>-<pid>.cpuprofile;
// - with BENCH_TIMING=1: the per-request marks of the window (markRequest, packages/shared
//   request-timing.ts), <BENCH_PROBE_DIR>/<service>-<pid>-<n>.timing.json, for the breakdown.
const { Session } = require('node:inspector');
const { monitorEventLoopDelay, performance, PerformanceObserver } = require('node:perf_hooks');
const { writeFileSync } = require('node:fs');
const path = require('node:path');

const probeDir = process.env.BENCH_PROBE_DIR;
const profileDir = process.env.BENCH_PROFILE_DIR;
// BENCH_PROFILE_KIND=heap: a V8 sampling heap profile of the first window instead of a CPU profile.
const heapProfile =
  process.env.BENCH_PROFILE_KIND === 'heap' || process.env.BENCH_PROFILE_KIND === 'heap-all';
// Installed before any module loads: request-timing.ts looks for it once, at import.
const timing = probeDir && process.env.BENCH_TIMING === '1' ? { on: false, marks: [] } : undefined;
if (timing) globalThis.__mandateRequestTiming = timing;
// services/<name>/src/main.ts (tsx) or dist/<name>/main.js (SERVICES_RUNTIME=dist).
const service = (/(?:services|dist)\/([^/]+)\//.exec(process.argv[1] ?? '') ?? [])[1] ?? 'node';
if (probeDir || profileDir) {
  const session = profileDir ? new Session() : undefined;
  session?.connect();
  // The histogram's timer wakes the loop once per `resolution` ms while a window is open: at 1 ms
  // that is 1,000 wake-ups a second in each of the stack's six processes, work bare express is not
  // given. BENCH_LOOP_RESOLUTION_MS sets it (default 10, node's own default).
  const histogram = monitorEventLoopDelay({
    resolution: Number(process.env.BENCH_LOOP_RESOLUTION_MS ?? 10),
  });
  let running = false;
  let windows = 0;
  let elu;
  // GC pauses of the window: a stall of the event loop is either GC or being descheduled.
  // Per kind (perf_hooks constants): 1 minor (scavenge), 2 major (mark-compact), 4 incremental, 8 weak callbacks.
  let gcKinds = {};
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = { 1: 'minor', 2: 'major', 4: 'incremental', 8: 'weak' }[entry.detail?.kind] ?? 'other';
      const k = (gcKinds[kind] ??= { count: 0, total: 0, max: 0 });
      k.count++;
      k.total += entry.duration;
      k.max = Math.max(k.max, entry.duration);
    }
  });
  const startProfile = () => {
    if (heapProfile) {
      session.post('HeapProfiler.enable');
      session.post('HeapProfiler.startSampling', {
        samplingInterval: 4096,
        // Kept: what survived a scavenge (the costly kind), though a later mark-compact freed it.
        includeObjectsCollectedByMajorGC: true,
        // BENCH_PROFILE_KIND=heap-all: every allocation, also what a scavenge freed (where the churn comes from).
        includeObjectsCollectedByMinorGC: process.env.BENCH_PROFILE_KIND === 'heap-all',
      });
    } else {
      session.post('Profiler.enable');
      session.post('Profiler.setSamplingInterval', { interval: 250 });
      session.post('Profiler.start');
    }
  };
  const openWindow = () => {
    running = true;
    windows++;
    histogram.reset();
    histogram.enable();
    gcKinds = {};
    gcObserver.observe({ entryTypes: ['gc'] });
    elu = performance.eventLoopUtilization();
    if (timing) {
      timing.marks = [];
      timing.on = true;
    }
    if (session && windows === 1) startProfile();
  };
  const writeTiming = () => {
    timing.on = false;
    writeFileSync(
      path.join(probeDir, `${service}-${process.pid}-${windows}.timing.json`),
      JSON.stringify(timing.marks),
    );
    timing.marks = [];
  };
  const writeLoop = () => {
    const used = performance.eventLoopUtilization(elu);
    const ms = (ns) => Math.round(ns / 1e4) / 100;
    const tenths = (x) => Math.round(x * 10) / 10;
    writeFileSync(
      path.join(probeDir, `${service}-${process.pid}-${windows}.loop.json`),
      JSON.stringify({
        service,
        window: windows,
        utilisation: Math.round(used.utilization * 1000) / 1000,
        delay_ms: {
          p50: ms(histogram.percentile(50)),
          p99: ms(histogram.percentile(99)),
          max: ms(histogram.max),
          mean: ms(histogram.mean),
        },
        heap_mb: Math.round(process.memoryUsage().heapUsed / 1e6),
        gc: {
          kinds: Object.fromEntries(
            Object.entries(gcKinds).map(([kind, k]) => [
              kind,
              { count: k.count, total_ms: tenths(k.total), max_ms: tenths(k.max) },
            ]),
          ),
        },
      }),
    );
  };
  const stopProfile = () => {
    const [domain, file] = heapProfile
      ? ['HeapProfiler.stopSampling', 'heapprofile']
      : ['Profiler.stop', 'cpuprofile'];
    // A heap profile holds what the window allocated that no GC has reclaimed yet: garbage promoted
    // to the old generation (medium-lived objects) shows there until the next mark-compact.
    session.post(domain, (err, result) => {
      if (!err)
        writeFileSync(
          path.join(profileDir, `${service}-${process.pid}.${file}`),
          JSON.stringify(result.profile),
        );
    });
  };
  const closeWindow = () => {
    running = false;
    histogram.disable();
    gcObserver.disconnect();
    if (timing) writeTiming();
    if (probeDir) writeLoop();
    if (session && windows === 1) stopProfile();
  };
  process.on('SIGUSR2', () => (running ? closeWindow() : openWindow()));
}
