import express from 'express';
import { listen, type RunningServer } from '@mandate/shared/http';
import {
  checkPresentation,
  type VerificationSession,
} from '../../src/identity-verifications/check-presentation';
import {
  buildAuthorizationRequest,
  createVerifierIdentity,
  freshSecret,
  REQUEST_OBJECT_CONTENT_TYPE,
  type VerifierIdentity,
} from '../../src/identity-verifications/request';
import {
  createTestPidIssuer,
  type TestPidIssuer,
  answerAuthorizationRequest,
  MISBEHAVIOUR_REASONS,
} from '@mandate/test-wallet';

/**
 * A tiny stand-in for the verifier's two public endpoints (request object, direct_post), built from
 * the core modules, so the test wallet is proven over real HTTP on loopback.
 */
interface Stored extends VerificationSession {
  requestObject: string;
  result?: Awaited<ReturnType<typeof checkPresentation>>;
}

describe('the test wallet over HTTP (loopback)', () => {
  let identity: VerifierIdentity;
  let issuer: TestPidIssuer;
  let server: RunningServer;
  let baseUrl: string;
  const sessions = new Map<string, Stored>();

  beforeAll(async () => {
    // localhost: the client_id DNS name must be the response_uri's host (x509_san_dns).
    identity = await createVerifierIdentity('localhost');
    issuer = await createTestPidIssuer();
    const app = express();
    app.get('/v1/identity-verifications/:id/request', (req, res) => {
      const session = sessions.get(req.params.id);
      if (!session) return void res.status(404).json({ error: 'NOT_FOUND', message: 'no such verification' });
      res.type(REQUEST_OBJECT_CONTENT_TYPE).send(session.requestObject);
    });
    app.post(
      '/v1/identity-verifications/:id/response',
      express.urlencoded({ extended: false }),
      async (req, res) => {
        const session = sessions.get(req.params.id);
        if (!session)
          return void res.status(404).json({ error: 'NOT_FOUND', message: 'no such verification' });
        const result = await checkPresentation(session, req.body as Record<string, unknown>, {
          trustedIssuers: [issuer.trustEntry],
          subjectSecret: 'secret',
          tenantId: 'tnt_test',
          fetchStatusList: () => issuer.statusListJwt(),
        });
        if (!session.answered) {
          // The first answer settles the session; a replay must not overwrite it.
          session.answered = true;
          session.status = result.status;
          session.result = result;
        }
        if (result.status === 'VERIFIED') return void res.status(200).json({});
        res.status(400).json({ error: result.reason, message: 'the presentation was not accepted' });
      },
    );
    server = await listen(app, 0, '127.0.0.1');
    baseUrl = `http://localhost:${server.port}`;
  });

  afterAll(async () => {
    await server.close();
  });

  async function startVerification(): Promise<{ id: string; authorizationRequest: string }> {
    const id = 'idv_' + freshSecret().slice(0, 20);
    const nonce = freshSecret();
    const state = freshSecret();
    const base = `${baseUrl}/v1/identity-verifications/${id}`;
    const { authorizationRequest, requestObject } = await buildAuthorizationRequest({
      identity,
      responseUri: `${base}/response`,
      requestUri: `${base}/request`,
      nonce,
      state,
    });
    sessions.set(id, {
      nonce,
      state,
      clientId: identity.clientId,
      expiresAt: new Date(Date.now() + 5 * 60_000),
      status: 'PENDING',
      answered: false,
      requestObject,
    });
    return { id, authorizationRequest };
  }

  it('when an honest wallet answers the authorization request, then 200 {} and the session is VERIFIED', async () => {
    const { id, authorizationRequest } = await startVerification();
    const answer = await answerAuthorizationRequest(authorizationRequest, { issuer });
    expect(answer).toEqual({ status: 200, body: {} });
    expect(sessions.get(id)?.result).toEqual(
      expect.objectContaining({ status: 'VERIFIED', assurance: 'HIGH', issuer: issuer.issuer }),
    );
  });

  it('when the wallet replays its answer, then the second is 400 ALREADY_ANSWERED and the session stays VERIFIED', async () => {
    const { id, authorizationRequest } = await startVerification();
    const answer = await answerAuthorizationRequest(authorizationRequest, { issuer, misbehave: 'replay' });
    expect(answer).toEqual({
      status: 200,
      body: {},
      replay: { status: 400, body: { error: 'ALREADY_ANSWERED', message: expect.any(String) } },
    });
    expect(sessions.get(id)?.status).toBe('VERIFIED');
  });

  it.each(MISBEHAVIOUR_REASONS)(
    'when the wallet misbehaves with %s, then 400 %s',
    async (misbehave, reason) => {
      const { id, authorizationRequest } = await startVerification();
      const answer = await answerAuthorizationRequest(authorizationRequest, { issuer, misbehave });
      expect(answer).toEqual({ status: 400, body: { error: reason, message: expect.any(String) } });
      expect(sessions.get(id)?.result).toEqual(expect.objectContaining({ status: 'FAILED', reason }));
    },
  );

  it('when the request_uri is plain http on a non-loopback host, then the wallet refuses before any request', async () => {
    await expect(
      answerAuthorizationRequest(
        'openid4vp://?client_id=x509_san_dns:evil.example&request_uri=http://evil.example/r',
        {
          issuer,
        },
      ),
    ).rejects.toThrow(/must be https/);
  });
});
