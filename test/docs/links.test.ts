import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** The documents a reader of a fresh clone has: README.md, docs/, and each package's README. */
function documents(): string[] {
  const docs = readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join('docs', f));
  const readmes = ['services', 'packages'].flatMap((dir) =>
    readdirSync(path.join(ROOT, dir))
      .map((name) => path.join(dir, name, 'README.md'))
      .filter((f) => existsSync(path.join(ROOT, f))),
  );
  return ['README.md', ...docs, ...readmes];
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');

const anchorsOf = (file: string) =>
  new Set(
    readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => /^#{1,6} (.+)$/.exec(l)?.[1])
      .filter((h): h is string => h !== undefined)
      .map(slug),
  );

/** What is wrong with one document's links and references (`doc` relative to the repository). */
function problemsIn(doc: string, text: string): string[] {
  const problems: string[] = [];
  // A document outside the clone: the specification the project was built from, a machine's path.
  for (const [i, line] of text.split('\n').entries()) {
    if (/\.\.\/shared|\bSPEC\b|\/work\//.test(line)) problems.push(`${doc}:${i + 1}: ${line.trim()}`);
  }
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^(https?|mailto):/.test(target)) continue;
    const [file, anchor] = target.split('#') as [string, string | undefined];
    const resolved = file === '' ? path.join(ROOT, doc) : path.resolve(ROOT, path.dirname(doc), file);
    if (!resolved.startsWith(ROOT + path.sep)) problems.push(`${doc}: ${target} leaves the repository`);
    else if (!existsSync(resolved)) problems.push(`${doc}: ${target} does not exist`);
    else if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor))
      problems.push(`${doc}: ${target} names no heading of ${path.relative(ROOT, resolved)}`);
  }
  return problems;
}

describe('documentation links', () => {
  it('when README.md, docs/ or a package README links or refers to a file, then it is inside the repository and exists, anchors included', () => {
    const problems = documents().flatMap((doc) =>
      problemsIn(doc, readFileSync(path.join(ROOT, doc), 'utf8')),
    );
    expect(problems).toEqual([]);
  });

  it('when a document links outside the repository, to a missing file or to a missing heading, then the check reports each', () => {
    const text = [
      'The spec is [`../shared/SPEC.md`](../shared/SPEC.md).',
      'See [this](../outside.md), [that](docs/NOPE.md), [there](docs/API.md#no-such-heading).',
      'Fine: [errors](docs/API.md#errors), [tenants](docs/API.md#tenants-role-assignments-onboarding-widget).',
    ].join('\n');
    expect(problemsIn('README.md', text)).toEqual([
      'README.md:1: The spec is [`../shared/SPEC.md`](../shared/SPEC.md).',
      'README.md: ../shared/SPEC.md leaves the repository',
      'README.md: ../outside.md leaves the repository',
      'README.md: docs/NOPE.md does not exist',
      'README.md: docs/API.md#no-such-heading names no heading of docs/API.md',
    ]);
  });
});
