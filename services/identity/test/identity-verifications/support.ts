import {
  checkPresentation,
  type CheckOptions,
  type VerificationSession,
} from '../../src/identity-verifications/check-presentation';
import {
  buildAuthorizationRequest,
  createVerifierIdentity,
  freshSecret,
  type VerifierIdentity,
} from '../../src/identity-verifications/request';
import {
  createTestPidIssuer,
  type TestPidIssuer,
  buildDirectPostResponse,
  resolveRequestObject,
  type WalletOptions,
} from '@mandate/test-wallet';

export const VERIFIER_HOST = 'verifier.example';

export interface Fixture {
  identity: VerifierIdentity;
  issuer: TestPidIssuer;
  options: CheckOptions;
}

export async function buildFixture(): Promise<Fixture> {
  const identity = await createVerifierIdentity(VERIFIER_HOST);
  const issuer = await createTestPidIssuer();
  return {
    identity,
    issuer,
    options: {
      trustedIssuers: [issuer.trustEntry],
      subjectSecret: 'test-subject-secret',
      tenantId: 'tnt_test',
      fetchStatusList: async (uri) => {
        if (uri !== issuer.statusListUri) throw new Error(`unknown status list ${uri}`);
        return issuer.statusListJwt();
      },
    },
  };
}

export function buildSession(
  identity: VerifierIdentity,
  overrides: Partial<VerificationSession> = {},
): VerificationSession {
  return {
    nonce: freshSecret(),
    state: freshSecret(),
    clientId: identity.clientId,
    expiresAt: new Date(Date.now() + 5 * 60_000),
    status: 'PENDING',
    answered: false,
    ...overrides,
  };
}

/** One session, its signed request resolved as the wallet would, and the wallet's direct_post fields. */
export async function walletAnswer(
  fixture: Fixture,
  wallet: Partial<WalletOptions> = {},
  session: VerificationSession = buildSession(fixture.identity),
) {
  const id = 'idv_' + freshSecret().slice(0, 16);
  const base = `https://${VERIFIER_HOST}/v1/identity-verifications/${id}`;
  const { requestObject } = await buildAuthorizationRequest({
    identity: fixture.identity,
    responseUri: `${base}/response`,
    requestUri: `${base}/request`,
    nonce: session.nonce,
    state: session.state,
  });
  const request = await resolveRequestObject(requestObject, fixture.identity.clientId);
  const response = await buildDirectPostResponse(request, { issuer: fixture.issuer, ...wallet });
  return { session, response };
}

export async function answerAndCheck(
  fixture: Fixture,
  wallet: Partial<WalletOptions> = {},
  session?: VerificationSession,
) {
  const { session: s, response } = await walletAnswer(fixture, wallet, session);
  return checkPresentation(s, response, fixture.options);
}
