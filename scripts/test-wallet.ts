/**
 * The test wallet's CLI: answers an `openid4vp://` authorization request with a PID from the TEST
 * issuer, as an EUDI wallet would (@mandate/test-wallet, packages/test-wallet).
 *
 *   npx tsx scripts/test-wallet.ts '<authorization_request>' [--misbehave <kind>]
 *
 * Without `--seed` the CLI uses the TEST issuer key the launchers' identity trusts
 * (DEFAULT_TEST_ISSUER_SEED).
 */
import {
  answerAuthorizationRequest,
  createTestPidIssuer,
  DEFAULT_TEST_ISSUER_SEED,
  MISBEHAVIOURS,
  type Misbehaviour,
} from '@mandate/test-wallet';

async function main(argv: string[]): Promise<number> {
  const args = [...argv];
  const take = (flag: string): string | undefined => {
    const i = args.indexOf(flag);
    if (i < 0) return undefined;
    const [, value] = args.splice(i, 2);
    return value;
  };
  const misbehave = take('--misbehave');
  const seed = take('--seed') ?? DEFAULT_TEST_ISSUER_SEED;
  const [authorizationRequest] = args;
  if (!authorizationRequest || (misbehave && !(MISBEHAVIOURS as readonly string[]).includes(misbehave))) {
    process.stderr.write(
      `usage: tsx scripts/test-wallet.ts '<openid4vp://…>' [--misbehave ${MISBEHAVIOURS.join('|')}] [--seed <s>]\n`,
    );
    return 2;
  }
  const issuer = await createTestPidIssuer({ seed });
  const answer = await answerAuthorizationRequest(authorizationRequest, {
    issuer,
    ...(misbehave ? { misbehave: misbehave as Misbehaviour } : {}),
  });
  process.stdout.write(JSON.stringify(answer, null, 2) + '\n');
  return answer.status === 200 && !answer.replay ? 0 : 1;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
