import { execFile } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const CONFIG = path.join(__dirname, 'event-contract-fixture/jest.config.js');

interface JestResult {
  testResults: { assertionResults: { title: string; status: string; failureMessages: string[] }[] }[];
}

/** jest (the repository's setup) on the fixture, its results as jest's JSON. */
function runFixture(): Promise<JestResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [path.join(ROOT, 'node_modules/jest/bin/jest.js'), '--config', CONFIG, '--json', '--ci'],
      { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        try {
          resolve(JSON.parse(stdout) as JestResult);
        } catch {
          reject(new Error(`jest gave no JSON: ${err?.message}\n${stderr}`));
        }
      },
    );
  });
}

// docs/DECISIONS.md, "Event data schemas": the services parse no event data at run time, so the
// tests must; test/support/event-contract.ts does, for every event buildEvent makes in any test.
describe('the event contract in tests', () => {
  it('when a producer builds an event whose data is off its type’s schema, then the test that ran it fails, naming the type and the member', async () => {
    const [file] = (await runFixture()).testResults;
    const results = file!.assertionResults.map((r) => ({
      title: r.title,
      status: r.status,
      names: r.failureMessages.some((m) => /MANDATE_REVOKED evt_\w+: version: /.test(m)),
    }));
    expect(results).toEqual([
      { title: 'off schema', status: 'failed', names: true },
      { title: 'on schema', status: 'passed', names: false },
    ]);
  }, 120_000);
});
