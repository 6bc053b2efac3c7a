import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  CompactSign,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  type CryptoKey,
  type JWK,
} from 'jose';
import { canonicalJson, newId, sha256Hex } from '@mandate/shared';
import { run, type Io } from '../src/cli';
import { EVIDENCE_JWS_TYP, verifyBundle } from '../src/verify';

interface TestKey {
  kid: string;
  jwk: JWK;
  privateKey: CryptoKey;
}

async function makeKey(): Promise<TestKey> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const { kty, crv, x, y } = await exportJWK(pair.publicKey);
  const kid = await calculateJwkThumbprint({ kty, crv, x, y }, 'sha256');
  return { kid, jwk: { kty, crv, x, y, kid, alg: 'ES256', use: 'sig' }, privateKey: pair.privateKey };
}

const sign = (key: TestKey, payload: string, typ?: string) =>
  new CompactSign(new TextEncoder().encode(payload))
    .setProtectedHeader({ alg: 'ES256', kid: key.kid, ...(typ ? { typ } : {}) })
    .sign(key.privateKey);

/** A bundle built the way the audit service builds one (README "Signing keys and evidence"). */
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
  const exported_at = '2026-11-21T13:00:00.000Z';
  const digest = sha256Hex(canonicalJson({ mandate, events, keys, exported_at }));
  return {
    mandate,
    events,
    keys,
    exported_at,
    digest,
    signature: await sign(bundleKey, digest, EVIDENCE_JWS_TYP),
  };
}
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
const failedChecks = (out: string) => [...out.matchAll(/^FAILED ([a-z ]+):/gm)].map((m) => m[1]);

describe('mandate-evidence verify', () => {
  let key: TestKey;
  let bundle: Bundle;
  beforeAll(async () => {
    key = await makeKey();
    bundle = await buildBundle(key);
  });
  const copy = (): Bundle => structuredClone(bundle);

  it('when the bundle is intact, then every check says OK and the exit code is 0', async () => {
    const res = await verifyFile(bundle);
    expect(res).toMatchObject({ code: 0, err: '' });
    expect(res.out).toMatch(/^OK digest: sha256 [0-9a-f]{64} covers the mandate, 3 event\(s\), 1 key\(s\)/m);
    expect(res.out).toContain(`OK bundle signature: ES256, key ${key.kid}`);
    expect(res.out).toContain(`OK mandate signature: ES256, key ${key.kid}`);
    expect(res.out).toContain(`OK evidence bundle for mandate ${bundle.mandate.id} verified`);
  });

  it('when the mandate and the bundle were signed by different keys (a rotation), then both keys are used and it verifies', async () => {
    const rotated = await buildBundle(key, await makeKey());
    const res = await verifyFile(rotated);
    expect(res.code).toBe(0);
    expect(rotated.keys).toHaveLength(2);
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
      t.digest = sha256Hex(
        canonicalJson({ mandate: t.mandate, events: t.events, keys: t.keys, exported_at: t.exported_at }),
      );
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

    it("when everything is re-signed with a forger's key, then only --jwks with the trusted keys tells", async () => {
      const forger = await makeKey();
      const forged = await buildBundle(forger);
      expect((await verifyFile(forged)).code).toBe(0);
      const jwks = JSON.stringify({ keys: [key.jwk] });
      const res = await verifyFile(forged, ['--jwks', 'jwks.json'], { 'jwks.json': jwks });
      expect(res.code).toBe(1);
      expect(failedChecks(res.out)).toEqual(['bundle signature', 'mandate signature']);
      expect(res.out).toContain(`key ${forger.kid} is not among the trusted keys`);
      expect((await verifyFile(bundle, ['--jwks', 'jwks.json'], { 'jwks.json': jwks })).code).toBe(0);
    });

    it('when the key the mandate names is missing from the bundle, then the mandate signature fails and says so', async () => {
      const other = await makeKey();
      const t = await buildBundle(other, key);
      t.keys = t.keys.filter((k) => k.kid !== other.kid);
      t.digest = sha256Hex(
        canonicalJson({ mandate: t.mandate, events: t.events, keys: t.keys, exported_at: t.exported_at }),
      );
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
        err: expect.stringContaining('bundle b.json is not JSON'),
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
    const results = await verifyBundle(bundle);
    expect(results.map((r) => [r.check, r.ok])).toEqual([
      ['digest', true],
      ['bundle signature', true],
      ['mandate signature', true],
    ]);
  });

  describe('the installed command (bin/mandate-evidence.js, what npx mandate-evidence runs)', () => {
    const bin = path.resolve(__dirname, '../bin/mandate-evidence.js');
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'evidence-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('when run on an intact bundle, then it exits 0; on a tampered one, 1 naming the check; on a missing file, 2', () => {
      const good = path.join(dir, 'good.json');
      const bad = path.join(dir, 'bad.json');
      writeFileSync(good, JSON.stringify(bundle));
      const t = copy();
      t.mandate.scope.constraints.max_amount = 5000000;
      writeFileSync(bad, JSON.stringify(t));

      const ok = spawnSync(process.execPath, [bin, 'verify', good], { encoding: 'utf8' });
      expect({ status: ok.status, stdout: ok.stdout, stderr: ok.stderr }).toMatchObject({
        status: 0,
        stdout: expect.stringContaining('OK mandate signature'),
      });
      const failed = spawnSync(process.execPath, [bin, 'verify', bad], { encoding: 'utf8' });
      expect(failed.status).toBe(1);
      expect(failedChecks(failed.stdout)).toEqual(['digest', 'mandate signature']);
      const missing = spawnSync(process.execPath, [bin, 'verify', path.join(dir, 'missing.json')], {
        encoding: 'utf8',
      });
      expect(missing.status).toBe(2);
    });
  });
});
