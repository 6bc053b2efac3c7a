import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SYNC_TIMEOUT_MS } from '@mandate/shared/testing';
import { canonicalJson, newId } from '@mandate/shared/core';
import { evidenceDigestOf, mandateSigningPayload } from '@mandate/shared/mandate';
import { run, type Io } from '../src/cli';
import { EVIDENCE_JWS_TYP, findDuplicateMember, verifyBundle } from '../src/verify';
import { EVERY_CHECK_PASSED } from './checks';
import { makeKey, sealBundle, sign, type TestKey } from './keys';

/** A bundle built the way the audit service builds one (docs/VERIFY-AND-IDENTITY.md, "Signing keys and evidence"). */
async function buildBundle(mandateKey: TestKey, bundleKey: TestKey = mandateKey) {
  const tenant = newId('tnt');
  const fields = {
    id: newId('mdt'),
    tenant_id: tenant,
    principal: { id: 'user_alice', type: 'person' },
    delegate: { id: 'agent_42', type: 'agent' },
    scope: { actions: ['payments:*'], constraints: { max_amount: 50000, currency: 'EUR' } },
    valid_from: null,
    expires_at: '2030-01-01T00:00:00.000Z',
    created_at: '2026-11-21T12:00:00.000Z',
  };
  const mandate = {
    ...fields,
    state: 'SUSPENDED',
    metadata: { ref: 'A-1' },
    version: 2,
    updated_at: '2026-11-21T12:05:00.000Z',
    signature: { alg: 'ES256', kid: mandateKey.kid, jws: await sign(mandateKey, canonicalJson(fields)) },
  };
  const event = (type: string, at: string, data: Record<string, unknown>) => ({
    id: newId('evt'),
    tenant_id: tenant,
    type,
    occurred_at: at,
    actor: { type: 'api_key', key_id: 'key_01jtestkey0000000000000000' },
    request_id: newId('req'),
    resource: { type: 'mandate', id: fields.id },
    data,
  });
  const events = [
    event('MANDATE_CREATED', '2026-11-21T12:00:00.000Z', { id: fields.id }),
    event('VERIFICATION_PERFORMED', '2026-11-21T12:01:00.000Z', { decision: 'ALLOW', reason: 'OK' }),
    event('MANDATE_SUSPENDED', '2026-11-21T12:05:00.000Z', { previous_state: 'ACTIVE', state: 'SUSPENDED' }),
  ];
  const keys = mandateKey.kid === bundleKey.kid ? [mandateKey.jwk] : [mandateKey.jwk, bundleKey.jwk];
  return sealBundle(
    { mandate, exported_at: '2026-11-21T13:00:00.000Z', events, evidence_exports: 2, keys },
    bundleKey,
  );
}
const redigest = (t: Bundle) => evidenceDigestOf(t);
type Bundle = Awaited<ReturnType<typeof buildBundle>>;

/** Flips one character of a string, keeping it the same length (one byte, in ASCII). */
const flip = (s: string, at = s.length - 1) => s.slice(0, at) + (s[at] === 'a' ? 'b' : 'a') + s.slice(at + 1);

/** Runs the CLI in-process on a bundle given as a file, capturing what it prints. */
async function cli(args: string[], files: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = {
    out: (l) => void out.push(l),
    err: (l) => void err.push(l),
    read: (p) => {
      if (!(p in files))
        throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
      return files[p]!;
    },
  };
  const code = await run(args, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}
const verifyFile = (bundle: unknown, extra: string[] = [], files: Record<string, string> = {}) =>
  cli(['verify', 'bundle.json', ...extra], { 'bundle.json': JSON.stringify(bundle, null, 2), ...files });
const failedChecks = (out: string) => [...out.matchAll(/^FAILED ([a-z -]+):/gm)].map((m) => m[1]);

describe('mandate-evidence verify', () => {
  let key: TestKey;
  let bundle: Bundle;
  beforeAll(async () => {
    key = await makeKey();
    bundle = await buildBundle(key);
  });
  const copy = (): Bundle => structuredClone(bundle);

  const pinned = () => ({ 'jwks.json': JSON.stringify({ keys: [key.jwk] }) });

  it('when the bundle is intact and its keys are pinned with --jwks, then every check says OK and the exit code is 0', async () => {
    const res = await verifyFile(bundle, ['--jwks', 'jwks.json'], pinned());
    expect(res).toMatchObject({ code: 0, err: '' });
    expect(res.out).toMatch(
      /^OK digest: sha256 [0-9a-f]{64} covers the mandate, exported_at, 3 event\(s\) and 2 earlier export\(s\)/m,
    );
    expect(res.out).toContain(`OK bundle signature: ES256, key ${key.kid}`);
    expect(res.out).toContain(`OK mandate signature: ES256, key ${key.kid}`);
    expect(res.out).toContain('OK pinned keys: every key used is in the pinned JWKS');
    expect(res.out).toContain(
      `OK evidence bundle for mandate ${bundle.mandate.id} verified against the pinned keys`,
    );
  });

  it('when the bundle is intact but no --jwks is given, then every check runs, the keys are called unpinned and the exit code is 3', async () => {
    const res = await verifyFile(bundle);
    expect(res.code).toBe(3);
    expect(failedChecks(res.out)).toEqual([]);
    expect(res.out).toContain('OK digest');
    expect(res.out).toContain(`UNPINNED evidence bundle for mandate ${bundle.mandate.id}`);
    expect(res.out).not.toContain('verified');
  });

  it('when the mandate and the bundle were signed by different keys (a rotation), then both keys are used and it verifies', async () => {
    const other = await makeKey();
    const rotated = await buildBundle(key, other);
    const jwks = JSON.stringify({ keys: [other.jwk, key.jwk] });
    const res = await verifyFile(rotated, ['--jwks', 'jwks.json'], { 'jwks.json': jwks });
    expect(res.code).toBe(0);
    expect(rotated.keys).toHaveLength(2);
  });

  describe('forgery (issue 11, item 3)', () => {
    it("when a fresh key is given the service's real kid and re-signs a widened mandate, then the key ids fail, with or without --jwks", async () => {
      const forger = await makeKey();
      const impostor: TestKey = { ...forger, kid: key.kid, jwk: { ...forger.jwk, kid: key.kid } };
      const forged = await buildBundle(impostor);
      forged.mandate.scope.actions = ['*'];
      forged.mandate.signature.jws = await sign(impostor, mandateSigningPayload(forged.mandate));
      forged.digest = redigest(forged);
      forged.signature = await sign(impostor, forged.digest, EVIDENCE_JWS_TYP);
      const unpinned = await verifyFile(forged);
      expect(unpinned.code).toBe(1);
      expect(failedChecks(unpinned.out)).toEqual(['key ids']);
      expect(unpinned.out).toContain(
        `FAILED key ids: kid ${key.kid} is not the RFC 7638 thumbprint of its key`,
      );
      const res = await verifyFile(forged, ['--jwks', 'jwks.json'], pinned());
      expect(res.code).toBe(1);
      expect(failedChecks(res.out)).toEqual(['key ids', 'pinned keys']);
      expect(res.out).not.toContain('verified');
    });

    it('when a member "verified": true is added at the top level, then the top-level members check fails', async () => {
      const res = await verifyFile({ ...copy(), verified: true }, ['--jwks', 'jwks.json'], pinned());
      expect(res.code).toBe(1);
      expect(failedChecks(res.out)).toEqual(['top-level members']);
      expect(res.out).toContain('FAILED top-level members: unknown member(s) "verified"');
    });

    it('when a duplicate "state" member precedes the real one, then the duplicate members check fails', async () => {
      const text = JSON.stringify(bundle).replace('"mandate":{', '"mandate":{"state":"ACTIVE",');
      expect((JSON.parse(text) as Bundle).mandate.state).toBe('SUSPENDED');
      const res = await cli(['verify', 'bundle.json', '--jwks', 'jwks.json'], {
        'bundle.json': text,
        ...pinned(),
      });
      expect(res.code).toBe(1);
      expect(failedChecks(res.out)).toEqual(['duplicate members']);
      expect(res.out).toContain('FAILED duplicate members: member "state" appears twice in one object');
    });

    it('when member names are equal only once decoded, or a duplicate sits deep in an array, then it is still a duplicate; equal names in sibling objects are not', () => {
      expect(findDuplicateMember('{"a":1,"\\u0061":2}')).toBe('a');
      expect(findDuplicateMember('{"x":[{"k":"\\"{","k":1}]}')).toBe('k');
      expect(findDuplicateMember('{"x":[{"k":1},{"k":2}],"y":{"k":"a,\\"k\\":"}}')).toBeUndefined();
    });
  });

  describe('tampering', () => {
    it('when one byte of a signed mandate field changes, then the digest and the mandate signature fail and are named', async () => {
      const t = copy();
      t.mandate.principal.id = flip(t.mandate.principal.id);
      const res = await verifyFile(t);
      expect(res.code).toBe(1);
      expect(failedChecks(res.out)).toEqual(['digest', 'mandate signature']);
      expect(res.out).toContain(
        "FAILED mandate signature: it signs other values than the mandate's immutable fields",
      );
      expect(res.err).toContain('NOT valid evidence: digest, mandate signature failed');
    });

    it('when one byte of an unsigned mandate field (its state) changes, then the digest fails', async () => {
      const t = copy();
      t.mandate.state = 'ACTIVE';
      const res = await verifyFile(t);
      expect(res.code).toBe(1);
      expect(failedChecks(res.out)).toEqual(['digest']);
      expect(res.out).toMatch(
        /FAILED digest: the bundle states [0-9a-f]{64} but its contents hash to [0-9a-f]{64}/,
      );
    });

    it('when one byte of an event changes, then the digest fails', async () => {
      const t = copy();
      t.events[1]!.data.decision = 'ALLoW';
      const res = await verifyFile(t);
      expect(res.code).toBe(1);
      expect(failedChecks(res.out)).toEqual(['digest']);
    });

    it('when an event is removed or the events are reordered, then the digest fails', async () => {
      const removed = copy();
      removed.events.splice(1, 1);
      expect(failedChecks((await verifyFile(removed)).out)).toEqual(['digest']);
      const reordered = copy();
      reordered.events.reverse();
      expect(failedChecks((await verifyFile(reordered)).out)).toEqual(['digest']);
    });

    it('when one byte of the digest changes, then the digest check and the bundle signature fail', async () => {
      const t = copy();
      t.digest = flip(t.digest);
      const res = await verifyFile(t);
      expect(res.code).toBe(1);
      expect(failedChecks(res.out)).toEqual(['digest', 'bundle signature']);
      expect(res.out).toContain(
        'FAILED bundle signature: it signs another digest than the one the bundle states',
      );
    });

    it('when an event is changed and the digest recomputed to match, then the bundle signature fails', async () => {
      const t = copy();
      t.events[0]!.occurred_at = '2026-11-21T11:00:00.000Z';
      t.digest = redigest(t);
      const res = await verifyFile(t);
      expect(res.code).toBe(1);
      expect(failedChecks(res.out)).toEqual(['bundle signature']);
    });

    it('when one byte of the bundle signature changes, then the bundle signature fails', async () => {
      const t = copy();
      const [h, p, s] = t.signature.split('.');
      t.signature = [h, p, flip(s!, 10)].join('.');
      const res = await verifyFile(t);
      expect(failedChecks(res.out)).toEqual(['bundle signature']);
      expect(res.out).toMatch(/FAILED bundle signature: the signature does not verify with key/);
    });

    it("when everything is re-signed with a forger's own key, then it is unpinned (3) without --jwks and fails the pinned keys with it", async () => {
      const forger = await makeKey();
      const forged = await buildBundle(forger);
      expect((await verifyFile(forged)).code).toBe(3);
      const res = await verifyFile(forged, ['--jwks', 'jwks.json'], pinned());
      expect(res.code).toBe(1);
      expect(failedChecks(res.out)).toEqual(['pinned keys']);
      expect(res.out).toContain(`key ${forger.kid} is not among the pinned keys`);
      expect((await verifyFile(bundle, ['--jwks', 'jwks.json'], pinned())).code).toBe(0);
    });

    it('when the key the mandate names is missing from the bundle, then the mandate signature fails and says so', async () => {
      const other = await makeKey();
      const t = await buildBundle(other, key);
      t.keys = t.keys.filter((k) => k.kid !== other.kid);
      t.digest = redigest(t);
      t.signature = await sign(key, t.digest, EVIDENCE_JWS_TYP);
      const res = await verifyFile(t);
      expect(failedChecks(res.out)).toEqual(['mandate signature']);
      expect(res.out).toContain(`key ${other.kid} is not in the bundle's keys`);
    });

    it('when the bundle signature is a mandate-style JWS without the evidence typ, then it is refused', async () => {
      const t = copy();
      t.signature = await sign(key, t.digest);
      expect(failedChecks((await verifyFile(t)).out)).toEqual(['bundle signature']);
    });
  });

  describe('usage and unreadable input (exit 2)', () => {
    it.each([
      [[], 'missing command'],
      [['check', 'b.json'], 'unknown command check'],
      [['verify'], 'missing bundle file'],
      [['verify', 'a.json', 'b.json'], 'unexpected argument b.json'],
      [['verify', 'a.json', '--strict'], 'unknown option --strict'],
      [['verify', 'a.json', '--jwks'], '--jwks needs a file'],
    ])('when called with %j, then exit 2 says "%s" and shows the usage', async (args, message) => {
      const res = await cli(args as string[]);
      expect(res.code).toBe(2);
      expect(res.err).toContain(message);
      expect(res.err).toContain('usage: mandate-evidence verify');
    });

    it('when the file is missing, not JSON, or not a bundle, then exit 2 names the problem', async () => {
      expect(await cli(['verify', 'nope.json'])).toMatchObject({
        code: 2,
        err: expect.stringContaining('cannot read bundle nope.json'),
      });
      expect(await cli(['verify', 'b.json'], { 'b.json': '{"mandate": ' })).toMatchObject({
        code: 2,
        err: expect.stringContaining('b.json: not JSON'),
      });
      const noEvents = { ...copy(), events: undefined };
      expect(await verifyFile(noEvents)).toMatchObject({
        code: 2,
        err: expect.stringContaining('events must be an array'),
      });
      const { created_at: _dropped, ...mandate } = copy().mandate;
      expect(await verifyFile({ ...copy(), mandate })).toMatchObject({
        code: 2,
        err: expect.stringContaining('mandate.created_at is missing'),
      });
    });

    it('when --help is asked for, then the usage is printed with exit 0', async () => {
      expect(await cli(['--help'])).toMatchObject({
        code: 0,
        out: expect.stringContaining('usage: mandate-evidence'),
      });
    });
  });

  it('when verifyBundle is used as a library, then it returns one result per check', async () => {
    const results = await verifyBundle(bundle, { trustedKeys: [key.jwk] });
    expect(results.map((r) => [r.check, r.ok])).toEqual(EVERY_CHECK_PASSED);
  });

  describe('the installed command (bin/mandate-evidence.js, what npx mandate-evidence runs)', () => {
    const bin = path.resolve(__dirname, '../bin/mandate-evidence.js');
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'evidence-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('when run on an intact bundle, then it exits 0 with --jwks and 3 without; on a tampered one, 1 naming the check; on a missing file, 2', () => {
      const good = path.join(dir, 'good.json');
      const bad = path.join(dir, 'bad.json');
      writeFileSync(good, JSON.stringify(bundle));
      const t = copy();
      t.mandate.scope.constraints.max_amount = 5000000;
      writeFileSync(bad, JSON.stringify(t));

      const jwks = path.join(dir, 'jwks.json');
      writeFileSync(jwks, JSON.stringify({ keys: [key.jwk] }));
      const ok = spawnSync(process.execPath, [bin, 'verify', good, '--jwks', jwks], {
        encoding: 'utf8',
        timeout: SYNC_TIMEOUT_MS,
      });
      expect({ status: ok.status, stdout: ok.stdout, stderr: ok.stderr }).toMatchObject({
        status: 0,
        stdout: expect.stringContaining('OK mandate signature'),
      });
      const unpinned = spawnSync(process.execPath, [bin, 'verify', good], {
        encoding: 'utf8',
        timeout: SYNC_TIMEOUT_MS,
      });
      expect(unpinned.status).toBe(3);
      const failed = spawnSync(process.execPath, [bin, 'verify', bad], {
        encoding: 'utf8',
        timeout: SYNC_TIMEOUT_MS,
      });
      expect(failed.status).toBe(1);
      expect(failedChecks(failed.stdout)).toEqual(['digest', 'mandate signature']);
      const missing = spawnSync(process.execPath, [bin, 'verify', path.join(dir, 'missing.json')], {
        encoding: 'utf8',
        timeout: SYNC_TIMEOUT_MS,
      });
      expect(missing.status).toBe(2);
    });
  });
});
