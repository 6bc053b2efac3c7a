import {
  buildAuthorizationRequest,
  createVerifierIdentity,
  freshSecret,
  type VerifierIdentity,
} from '../../src/identity-verifications/request';
import {
  answerAuthorizationRequest,
  resolveRequestObject,
  WalletRejectedRequest,
  createTestPidIssuer,
} from '@mandate/test-wallet';

async function requestObjectOf(identity: VerifierIdentity, host = identity.host): Promise<string> {
  const base = `https://${host}/v1/identity-verifications/idv_1`;
  const { requestObject } = await buildAuthorizationRequest({
    identity: { ...identity, host },
    responseUri: `${base}/response`,
    requestUri: `${base}/request`,
    nonce: freshSecret(),
    state: freshSecret(),
  });
  return requestObject;
}

describe('the test wallet checks the request object', () => {
  it('when the request object is intact, then it yields client_id, response_uri, nonce, state and the query', async () => {
    const identity = await createVerifierIdentity('verifier.example');
    const resolved = await resolveRequestObject(await requestObjectOf(identity), identity.clientId);
    expect(resolved).toEqual(
      expect.objectContaining({
        clientId: 'x509_san_dns:verifier.example',
        responseUri: 'https://verifier.example/v1/identity-verifications/idv_1/response',
      }),
    );
    expect(resolved.dcqlQuery.credentials[0]?.id).toBe('pid');
  });

  it('when the payload was changed after signing, then the wallet refuses it', async () => {
    const identity = await createVerifierIdentity('verifier.example');
    const [h, p, s] = (await requestObjectOf(identity)).split('.');
    const payload = JSON.parse(Buffer.from(p!, 'base64url').toString('utf8'));
    payload.response_uri = 'https://verifier.example/elsewhere';
    const forged = [h, Buffer.from(JSON.stringify(payload)).toString('base64url'), s].join('.');
    await expect(resolveRequestObject(forged)).rejects.toThrow('request object signature does not verify');
  });

  it('when the client_id names a host the certificate does not, then the wallet refuses it', async () => {
    const identity = await createVerifierIdentity('verifier.example');
    const impostor = { ...identity, clientId: 'x509_san_dns:bank.example' };
    const requestObject = await requestObjectOf(impostor, 'bank.example');
    await expect(resolveRequestObject(requestObject)).rejects.toThrow(WalletRejectedRequest);
    await expect(resolveRequestObject(requestObject)).rejects.toThrow(/does not name bank\.example/);
  });

  it('when the link names another client_id than the request object, then the wallet refuses it', async () => {
    const identity = await createVerifierIdentity('verifier.example');
    await expect(
      resolveRequestObject(await requestObjectOf(identity), 'x509_san_dns:other.example'),
    ).rejects.toThrow(/differs from the link/);
  });

  it.each([
    ['null (jq of an answer without authorization_request)', 'null'],
    ['empty', ''],
    [
      "the service's 503 answer",
      '{"error":"SERVICE_UNAVAILABLE","message":"Wallet verification is not configured on this service"}',
    ],
  ])(
    'when given %s instead of a link, then the wallet says in one sentence that the service has no wallet',
    async (_, raw) => {
      const issuer = await createTestPidIssuer({ seed: 'test-wallet-no-link' });
      const refused = answerAuthorizationRequest(raw, { issuer });
      await expect(refused).rejects.toThrow(WalletRejectedRequest);
      await expect(refused).rejects.toThrow(
        /^no authorization request: this service has no wallet configured \(set WALLET_PUBLIC_URL and WALLET_SUBJECT_SECRET on identity, or use npm start or npm run start:services, which set them\)$/,
      );
    },
  );

  it('when given something else than an openid4vp:// link, then the wallet says what it expects', async () => {
    const issuer = await createTestPidIssuer({ seed: 'test-wallet-no-link' });
    await expect(answerAuthorizationRequest('idv_123', { issuer })).rejects.toThrow(
      'not an openid4vp:// authorization request: pass the authorization_request of POST /v1/identity-verifications',
    );
  });
});
