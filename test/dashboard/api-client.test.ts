import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const SRC = path.resolve(__dirname, '../../packages/dashboard/src');

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sourcesUnder(full) : /\.tsx?$/.test(name) ? [full] : [];
  });
}

/** The code of a file without its comments (a comment may name a path). */
const codeOf = (file: string) =>
  readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');

// The dashboard calls the API through @mandate/client only: typed methods, the client's errors.
// The one path it calls by name is the evidence bundle, read as text through the client (its digest
// is checked over its own bytes); the playground names verify's path only in the curl it shows. The
// OIDC provider is reached through oauth4webapi.
describe('the dashboard and the API', () => {
  const files = sourcesUnder(SRC);

  it('when its sources are read, then none calls fetch or XMLHttpRequest itself', () => {
    expect(files.length).toBeGreaterThan(10);
    const offending = files.filter((file) => /\bfetch\s*\(|XMLHttpRequest/.test(codeOf(file)));
    expect(offending.map((file) => path.relative(SRC, file))).toEqual([]);
  });

  it('when its sources are read, then no API path is spelled but the evidence bundle read as text', () => {
    const spelled = files.flatMap((file) =>
      [...codeOf(file).matchAll(/['"`]\/v1\/[^'"`]*/g)].map((m) => `${path.relative(SRC, file)}: ${m[0]}`),
    );
    expect(spelled).toEqual([
      'pages/Evidence.tsx: `/v1/mandates/${encodeURIComponent(mandateId)}/evidence',
      // Shown, not called: the path of the curl the playground gives to copy.
      'pages/Verify.tsx: "/v1/verify',
    ]);
  });
});
