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

/**
 * The name of the specification the project was built from, which is not in the repository. Spelled
 * in parts, so that this check's own patterns and fixtures are not citations of it.
 */
const ORIGIN_DOC = ['SP', 'EC'].join('');
const ORIGIN_DOC_WORD = new RegExp(`\\b${ORIGIN_DOC}\\b`);
const ORIGIN_DOC_SECTION = new RegExp(`\\b${ORIGIN_DOC} §`, 'g');

/** What is wrong with one document's links and references (`doc` relative to the repository). */
function problemsIn(doc: string, text: string): string[] {
  const problems: string[] = [];
  // A document outside the clone: the specification the project was built from, a machine's path.
  for (const [i, line] of text.split('\n').entries()) {
    if (/\.\.\/shared|\/work\//.test(line) || ORIGIN_DOC_WORD.test(line))
      problems.push(`${doc}:${i + 1}: ${line.trim()}`);
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

/** The repository's own source files (TypeScript and JavaScript), outside node_modules and builds. */
function sourceFiles(dir = ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name.startsWith('.') || ['node_modules', 'dist', 'coverage'].includes(entry.name)) return [];
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.(ts|tsx|mjs|js)$/.test(entry.name) ? [path.relative(ROOT, full)] : [];
  });
}

/**
 * What is wrong with the references in one source file's comments and test names: a rule the code
 * enforces must be findable in the repository's own docs, so a citation names a doc that exists
 * (`docs/API.md`, `docs/API.md#anchor`, `docs/API.md, "Heading"`), never the spec it came from.
 */
function referenceProblemsIn(file: string, text: string): string[] {
  const problems: string[] = [];
  const at = (index: number) => `${file}:${text.slice(0, index).split('\n').length}`;
  for (const m of text.matchAll(ORIGIN_DOC_SECTION))
    problems.push(`${at(m.index)}: cites the spec, not a doc`);
  for (const m of text.matchAll(
    /\b((?:docs|services\/[a-z-]+|packages\/[a-z-]+)\/[A-Z][A-Z0-9-]*\.md)(?:#([a-z0-9-]+)|, "([^"]+)")?/g,
  )) {
    const [, doc, anchor, wrapped] = m as unknown as [string, string, string?, string?];
    // A heading may wrap onto the comment's next line.
    const heading = wrapped?.replace(/\s*\n\s*(\*|\/\/)?\s*/g, ' ');
    const resolved = path.join(ROOT, doc);
    if (!existsSync(resolved)) problems.push(`${at(m.index)}: ${doc} does not exist`);
    else if (anchor && !anchorsOf(resolved).has(anchor))
      problems.push(`${at(m.index)}: ${doc}#${anchor} names no heading`);
    else if (heading && !anchorsOf(resolved).has(slug(heading)))
      problems.push(`${at(m.index)}: ${doc} has no heading "${heading}"`);
  }
  return problems;
}

describe('documentation links', () => {
  it('when a source comment cites a rule, then it names a doc of the repository that exists, with its heading, never the spec', () => {
    const problems = sourceFiles()
      .filter((f) => f !== path.join('test', 'docs', 'links.test.ts'))
      .flatMap((f) => referenceProblemsIn(f, readFileSync(path.join(ROOT, f), 'utf8')));
    expect(problems).toEqual([]);
  });

  it('when a source comment cites the spec, a missing doc or a missing heading, then the check reports each', () => {
    const text = [
      `// The closed set of codes (${ORIGIN_DOC} §3).`,
      '// See docs/NOPE.md and docs/API.md#no-such-heading.',
      '/** Per caller (docs/API.md, "No such heading"). */',
      '/** Fine: docs/API.md, "Errors"; docs/API.md#idempotency; docs/DECISIONS.md. */',
      '// services/verify/README.md, "No such heading" either.',
    ].join('\n');
    expect(referenceProblemsIn('x.ts', text)).toEqual([
      'x.ts:1: cites the spec, not a doc',
      'x.ts:2: docs/NOPE.md does not exist',
      'x.ts:2: docs/API.md#no-such-heading names no heading',
      'x.ts:3: docs/API.md has no heading "No such heading"',
      'x.ts:5: services/verify/README.md has no heading "No such heading"',
    ]);
  });

  it('when README.md, docs/ or a package README links or refers to a file, then it is inside the repository and exists, anchors included', () => {
    const problems = documents().flatMap((doc) =>
      problemsIn(doc, readFileSync(path.join(ROOT, doc), 'utf8')),
    );
    expect(problems).toEqual([]);
  });

  it('when a document links outside the repository, to a missing file or to a missing heading, then the check reports each', () => {
    const text = [
      `The spec is [\`../shared/${ORIGIN_DOC}.md\`](../shared/${ORIGIN_DOC}.md).`,
      'See [this](../outside.md), [that](docs/NOPE.md), [there](docs/API.md#no-such-heading).',
      'Fine: [errors](docs/API.md#errors), [tenants](docs/API.md#tenants-role-assignments-onboarding-widget).',
    ].join('\n');
    expect(problemsIn('README.md', text)).toEqual([
      `README.md:1: The spec is [\`../shared/${ORIGIN_DOC}.md\`](../shared/${ORIGIN_DOC}.md).`,
      `README.md: ../shared/${ORIGIN_DOC}.md leaves the repository`,
      'README.md: ../outside.md leaves the repository',
      'README.md: docs/NOPE.md does not exist',
      'README.md: docs/API.md#no-such-heading names no heading of docs/API.md',
    ]);
  });
});
