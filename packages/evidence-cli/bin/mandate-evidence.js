#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so the repo needs no build step.
require('tsx/cjs');
// main never rejects: it reports any error itself and sets the exit code, so nothing is awaited here.
void require('../src/cli.ts').main();
