/* global require, process */
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS preload, run by node itself */
// Preloaded into gateway and verify by bench/verify.ts with BENCH_PROFILE=<dir> (`--cpu-prof` is
// not allowed in NODE_OPTIONS on Node 20). The first SIGUSR2 starts the V8 profiler, the second
// writes <dir>/<service>-<pid>.cpuprofile, so the profile covers the measured load only.
const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');
const path = require('node:path');

const dir = process.env.BENCH_PROFILE_DIR;
const service = path.basename(path.resolve(process.argv[1] ?? 'node', '../..'));
if (dir) {
  const session = new Session();
  session.connect();
  let running = false;
  process.on('SIGUSR2', () => {
    if (!running) {
      session.post('Profiler.enable');
      session.post('Profiler.setSamplingInterval', { interval: 250 });
      session.post('Profiler.start');
      running = true;
      return;
    }
    running = false;
    session.post('Profiler.stop', (err, result) => {
      if (!err)
        writeFileSync(path.join(dir, `${service}-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
