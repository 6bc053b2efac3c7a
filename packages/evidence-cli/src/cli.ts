import { readFileSync } from 'node:fs';
import type { JWK } from 'jose';
import type { ConsistencyProofFile } from './log-proof';
import { BundleFormatError, verifyBundleText } from './verify';

const USAGE = `usage: mandate-evidence verify <bundle.json | -> --jwks <jwks.json>
         [--checkpoint <kept-checkpoint.json> [--consistency <proof.json>]]

Checks a mandate evidence bundle offline:
  duplicate members  no JSON object names a member twice
  top-level members  only mandate, exported_at, events, evidence_exports, keys, digest, signature
  key ids            every key's kid is its RFC 7638 thumbprint
  digest             sha256 over the canonical header, each canonical event and the trailer
  bundle signature   the JWS over the digest
  mandate signature  the mandate's JWS over its immutable fields
  pinned keys        every key used is in --jwks: the JWKS saved from the service's
                     GET /v1/.well-known/jwks.json. Without it the bundle's own keys prove nothing.
  log checkpoint     the checkpoint's JWS (typ audit-checkpoint+jwt) over its claims, of the tenant
  log proofs         every event is leaf seq-1 of the checkpoint's tree: one joint RFC 9162
                     proof (log_proof), or in older bundles a path per event (proofs);
                     a bundle from before the log has none, and the checker says so
  log consistency    with --checkpoint (one kept earlier, from GET /v1/audit/checkpoints/latest):
                     the bundle's log extends it; --consistency is the proof between the two
                     sizes from GET /v1/audit/consistency-proof?from=M&to=N (unneeded if equal)

exit 0: verified against the pinned keys; 1: a check failed (named in the output);
     2: usage or unreadable input; 3: every check passed but the keys are unpinned (no --jwks)`;

export interface Io {
  out(line: string): void;
  err(line: string): void;
  /** Reads a file, or stdin for "-". */
  read(path: string): string;
}

const processIo: Io = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
  read: (path) => readFileSync(path === '-' ? 0 : path, 'utf8'),
};

/** The CLI without the process: returns the exit code. */
export async function run(argv: string[], io: Io = processIo): Promise<number> {
  if (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    io.out(USAGE);
    return 0;
  }
  const [command, ...rest] = argv;
  const args = parseArgs(rest);
  if (typeof args === 'string') return usage(io, args);
  const { file, jwksFile, checkpointFile, consistencyFile } = args;
  if (command !== 'verify') return usage(io, command ? `unknown command ${command}` : 'missing command');
  if (!file) return usage(io, 'missing bundle file');
  if (rest.includes('--jwks') && !jwksFile) return usage(io, '--jwks needs a file');
  if (rest.includes('--checkpoint') && !checkpointFile) return usage(io, '--checkpoint needs a file');
  if (rest.includes('--consistency') && !consistencyFile) return usage(io, '--consistency needs a file');
  if (consistencyFile && !checkpointFile) return usage(io, '--consistency goes with --checkpoint');

  const bundleText = readText(io, file, 'bundle');
  if (bundleText === undefined) return 2;
  let trustedKeys: JWK[] | undefined;
  if (jwksFile) {
    const jwks = readJson(io, jwksFile, 'JWKS') as { keys?: unknown } | undefined;
    if (jwks === undefined) return 2;
    if (!Array.isArray(jwks?.keys)) {
      io.err(`mandate-evidence: ${jwksFile} is not a JWKS ({"keys": [...]})`);
      return 2;
    }
    trustedKeys = jwks.keys as JWK[];
  }

  let keptCheckpoint: unknown;
  if (checkpointFile) {
    keptCheckpoint = readJson(io, checkpointFile, 'checkpoint');
    if (keptCheckpoint === undefined) return 2;
  }
  let consistency: ConsistencyProofFile | undefined;
  if (consistencyFile) {
    consistency = readConsistency(io, consistencyFile);
    if (consistency === undefined) return 2;
  }

  let results;
  try {
    results = await verifyBundleText(bundleText, { trustedKeys, keptCheckpoint, consistency });
  } catch (err) {
    if (err instanceof BundleFormatError) {
      io.err(`mandate-evidence: ${file}: ${err.message}`);
      return 2;
    }
    throw err;
  }
  return report(io, file, bundleText, results, trustedKeys !== undefined);
}

/** Prints every check and the verdict; the exit code: 0 verified, 1 invalid, 3 valid but unpinned. */
function report(
  io: Io,
  file: string,
  bundleText: string,
  results: Awaited<ReturnType<typeof verifyBundleText>>,
  pinned: boolean,
): number {
  for (const r of results) io.out(`${r.ok ? 'OK' : 'FAILED'} ${r.check}: ${r.detail}`);
  const failed = results.filter((r) => !r.ok).map((r) => r.check);
  if (failed.length > 0) {
    io.err(`mandate-evidence: ${file} is NOT valid evidence: ${failed.join(', ')} failed`);
    return 1;
  }
  const mandate = (JSON.parse(bundleText) as { mandate: { id?: unknown } }).mandate;
  if (!pinned) {
    io.out(
      `UNPINNED evidence bundle for mandate ${String(mandate.id)}: consistent, but checked only against its own keys, which anyone can make; pass --jwks with the service's published JWKS to verify it`,
    );
    return 3;
  }
  io.out(`OK evidence bundle for mandate ${String(mandate.id)} verified against the pinned keys`);
  return 0;
}

interface Args {
  file?: string;
  jwksFile?: string;
  checkpointFile?: string;
  consistencyFile?: string;
}

/** The verify command's files, or what is wrong with its arguments (a usage error). */
function parseArgs(rest: string[]): Args | string {
  const args: Args = {};
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--jwks') args.jwksFile = rest[++i];
    else if (arg.startsWith('--jwks=')) args.jwksFile = arg.slice('--jwks='.length);
    else if (arg === '--checkpoint') args.checkpointFile = rest[++i];
    else if (arg.startsWith('--checkpoint=')) args.checkpointFile = arg.slice('--checkpoint='.length);
    else if (arg === '--consistency') args.consistencyFile = rest[++i];
    else if (arg.startsWith('--consistency=')) args.consistencyFile = arg.slice('--consistency='.length);
    else if (arg.startsWith('-') && arg !== '-') return `unknown option ${arg}`;
    else if (args.file === undefined) args.file = arg;
    else return `unexpected argument ${arg}`;
  }
  return args;
}

/** A consistency proof file, or undefined once the problem with it is reported. */
function readConsistency(io: Io, path: string): ConsistencyProofFile | undefined {
  const proof = readJson(io, path, 'consistency proof') as Partial<ConsistencyProofFile> | undefined;
  if (proof === undefined) return undefined;
  if (
    !Number.isSafeInteger(proof?.from) ||
    !Number.isSafeInteger(proof?.to) ||
    !Array.isArray(proof?.path) ||
    !proof.path.every((p) => typeof p === 'string')
  ) {
    io.err(`mandate-evidence: ${path} is not a consistency proof ({"from", "to", "path": [...]})`);
    return undefined;
  }
  return proof as ConsistencyProofFile;
}

function usage(io: Io, problem: string): number {
  io.err(`mandate-evidence: ${problem}\n\n${USAGE}`);
  return 2;
}

function readText(io: Io, path: string, what: string): string | undefined {
  try {
    return io.read(path);
  } catch (err) {
    io.err(`mandate-evidence: cannot read ${what} ${path}: ${(err as Error).message}`);
    return undefined;
  }
}

function readJson(io: Io, path: string, what: string): unknown {
  const text = readText(io, path, what);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    io.err(`mandate-evidence: ${what} ${path} is not JSON: ${(err as Error).message}`);
    return undefined;
  }
}

/** Entry point of bin/mandate-evidence.js. */
export async function main(argv = process.argv.slice(2)): Promise<void> {
  try {
    process.exitCode = await run(argv);
  } catch (err) {
    process.stderr.write(`mandate-evidence: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 2;
  }
}
