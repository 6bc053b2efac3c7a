import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';
import { DOCUMENTED_SECRET_VALUES, commonConfigShape, env, parseConfig } from '@mandate/shared/core';
import { separateProcessConfig } from '../src/core/secrets';

const ROOT = path.resolve(__dirname, '../../..');
const schema = z.object({ ...commonConfigShape, OPERATOR_TOKEN: env.optionalString() });
const strong = 'a1'.repeat(16);
const parse = (vars: Record<string, string>, read?: (p: string) => string) =>
  parseConfig(separateProcessConfig(schema, read), vars);

describe('secrets of a service run as its own process (docs/API.md, "Hardening")', () => {
  it('when INTERNAL_TOKEN_SECRET is shorter than 32 characters, then configuration fails naming it, without its value', () => {
    const secret = 'short-but-secret-value';
    let message = '';
    try {
      parse({ INTERNAL_TOKEN_SECRET: secret });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/INTERNAL_TOKEN_SECRET: must be at least 32 characters/);
    expect(message).not.toContain(secret);
  });

  it('when INTERNAL_TOKEN_SECRET is missing, then configuration fails naming it (a separate process has nobody to generate one)', () => {
    expect(() => parse({})).toThrow(
      /INTERNAL_TOKEN_SECRET: is required when a service runs as its own process/,
    );
  });

  it.each(DOCUMENTED_SECRET_VALUES.map((v) => [v]))(
    'when OPERATOR_TOKEN is the documented value %s, then configuration fails naming it',
    (value) => {
      expect(() => parse({ INTERNAL_TOKEN_SECRET: strong, OPERATOR_TOKEN: value })).toThrow(
        /OPERATOR_TOKEN: is an example value printed in the documentation/,
      );
    },
  );

  it('when both secrets are strong and undocumented, then they are taken as given', () => {
    expect(parse({ INTERNAL_TOKEN_SECRET: strong, OPERATOR_TOKEN: strong.toUpperCase() })).toMatchObject({
      INTERNAL_TOKEN_SECRET: strong,
      OPERATOR_TOKEN: strong.toUpperCase(),
    });
  });

  it('when the embedded launcher parses the plain schema, then a short secret is not refused there (it generates its own)', () => {
    expect(parseConfig(schema, { INTERNAL_TOKEN_SECRET: 'short' }).INTERNAL_TOKEN_SECRET).toBe('short');
  });

  describe('<NAME>_FILE', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'secrets-test-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('when INTERNAL_TOKEN_SECRET_FILE, OPERATOR_TOKEN_FILE and REDIS_URL_FILE name files, then their trimmed contents are used', () => {
      writeFileSync(path.join(dir, 'internal'), `${strong}\n`);
      writeFileSync(path.join(dir, 'operator'), `${strong}op\n`);
      writeFileSync(path.join(dir, 'redis'), 'redis://:pw@redis:6379\n');
      expect(
        parse({
          INTERNAL_TOKEN_SECRET_FILE: path.join(dir, 'internal'),
          OPERATOR_TOKEN_FILE: path.join(dir, 'operator'),
          REDIS_URL_FILE: path.join(dir, 'redis'),
        }),
      ).toMatchObject({
        INTERNAL_TOKEN_SECRET: strong,
        OPERATOR_TOKEN: `${strong}op`,
        REDIS_URL: 'redis://:pw@redis:6379',
      });
    });

    it('when the file holds a short secret, then configuration fails naming the variable', () => {
      writeFileSync(path.join(dir, 'weak'), 'weak\n');
      expect(() => parse({ INTERNAL_TOKEN_SECRET_FILE: path.join(dir, 'weak') })).toThrow(
        /INTERNAL_TOKEN_SECRET: must be at least 32 characters/,
      );
    });

    it('when the file cannot be read, or the variable is set too, then configuration fails naming the variable', () => {
      expect(() => parse({ INTERNAL_TOKEN_SECRET_FILE: path.join(dir, 'absent') })).toThrow(
        /INTERNAL_TOKEN_SECRET_FILE: cannot read .*absent \(ENOENT\)/,
      );
      writeFileSync(path.join(dir, 'both'), strong);
      expect(() =>
        parse({ INTERNAL_TOKEN_SECRET: strong, INTERNAL_TOKEN_SECRET_FILE: path.join(dir, 'both') }),
      ).toThrow(/INTERNAL_TOKEN_SECRET: set INTERNAL_TOKEN_SECRET or INTERNAL_TOKEN_SECRET_FILE, not both/);
    });
  });

  it('when a service process starts with a short INTERNAL_TOKEN_SECRET, then it exits 1 with a line naming the variable and never the value', async () => {
    const secret = 'too-short-process-secret';
    const result = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'services', 'identity', 'src', 'main.ts')],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', INTERNAL_TOKEN_SECRET: secret, PORT: '0', LOG_LEVEL: 'warn' },
        timeout: 20_000,
      },
    ).then(
      () => ({ code: 0, output: '' }),
      (err: { code: number; stdout: string; stderr: string }) => ({
        code: err.code,
        output: err.stdout + err.stderr,
      }),
    );
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/config error: INTERNAL_TOKEN_SECRET: must be at least 32 characters/);
    expect(result.output).not.toContain(secret);
  }, 30_000);
});
