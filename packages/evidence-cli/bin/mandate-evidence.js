#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so the repo needs no build step.
require('tsx/cjs');
require('../src/cli.ts').main();
