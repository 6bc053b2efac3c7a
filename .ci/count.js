// Reads jest's JSON results and the command's exit status; prints "N passed, N failed, N skipped" and
// exits with the run's status. A green line must mean every suite ran and passed, so:
// - a suite that failed without a failed test (it did not load, a hook threw) counts as one failure;
// - a run jest marks unsuccessful counts as at least one failure;
// - a command that failed without results (type check, lint, install) counts as one failure;
// - a non-zero exit always shows a non-zero failed count, and any failure exits non-zero;
// - a skipped or todo test fails the run (exit non-zero, the failed count unchanged): a skip hides
//   a test that no longer runs, and a green line must mean every test ran.
const fs = require('node:fs');

const [file, statusArg] = process.argv.slice(2);
let status = Number(statusArg) || 0;
let passed = 0;
let failed = 0;
let skipped = 0;

if (file && fs.existsSync(file)) {
  const r = JSON.parse(fs.readFileSync(file, 'utf8'));
  passed = r.numPassedTests;
  skipped = r.numPendingTests + r.numTodoTests;
  const brokenSuites = r.testResults.filter(
    (suite) => suite.status === 'failed' && !suite.assertionResults.some((a) => a.status === 'failed'),
  ).length;
  failed = r.numFailedTests + brokenSuites;
  if (!r.success && failed === 0) failed = 1;
} else {
  failed = 1;
}
if (status !== 0 && failed === 0) failed = 1;
if (failed > 0 && status === 0) status = 1;
if (skipped > 0 && status === 0) status = 1;

if (skipped > 0) console.error(`${skipped} skipped: a skipped test fails the run; make it run or remove it`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(status);
