import { webcrypto } from 'node:crypto';
import { compactVerify, decodeProtectedHeader } from 'jose';
import { DcqlQuery } from 'dcql';
import {
  buildAuthorizationRequest,
  createVerifierIdentity,
  selfSignedCertificate,
  freshSecret,
  REQUEST_OBJECT_TYP,
  SELF_ISSUED_AUDIENCE,
  verifierIdentityFromPem,
} from '../../src/identity-verifications/request';
import { x509 } from '../../src/identity-verifications/x509';

const HOST = 'verifier.example';
const base = `https://${HOST}/v1/identity-verifications/idv_1`;

async function build(identity: Awaited<ReturnType<typeof createVerifierIdentity>>) {
  const nonce = freshSecret();
  const state = freshSecret();
  const built = await buildAuthorizationRequest({
    identity,
    responseUri: `${base}/response`,
    requestUri: `${base}/request`,
    nonce,
    state,
  });
  return { ...built, nonce, state };
}

describe('the signed request object', () => {
  it('when built, then it verifies with the key of its x5c leaf, which names the client_id host', async () => {
    const identity = await createVerifierIdentity(HOST);
    const { requestObject } = await build(identity);
    const header = decodeProtectedHeader(requestObject);
    expect(header).toEqual(expect.objectContaining({ alg: 'ES256', typ: REQUEST_OBJECT_TYP }));
    const leaf = new x509.X509Certificate(Buffer.from(header.x5c![0]!, 'base64'));
    const { payload } = await compactVerify(requestObject, await leaf.publicKey.export());
    const claims = JSON.parse(Buffer.from(payload).toString('utf8'));
    expect(claims).toEqual(
      expect.objectContaining({
        client_id: `x509_san_dns:${HOST}`,
        aud: SELF_ISSUED_AUDIENCE,
        response_type: 'vp_token',
        response_mode: 'direct_post',
        response_uri: `${base}/response`,
      }),
    );
    expect(claims.exp - claims.iat).toBe(300);
    const san = leaf.getExtension(x509.SubjectAlternativeNameExtension);
    expect(san?.names.items.map((n) => n.value)).toEqual([HOST]);
  });

  it('when built, then the DCQL query asks one PID (dc+sd-jwt, urn:eudi:pid:1) for exactly the three claims', async () => {
    const { requestObject } = await build(await createVerifierIdentity(HOST));
    const { dcql_query } = JSON.parse(
      Buffer.from(requestObject.split('.')[1]!, 'base64url').toString('utf8'),
    );
    const query = DcqlQuery.parse(dcql_query);
    DcqlQuery.validate(query);
    expect(dcql_query).toEqual({
      credentials: [
        {
          id: 'pid',
          format: 'dc+sd-jwt',
          meta: { vct_values: ['urn:eudi:pid:1'] },
          require_cryptographic_holder_binding: true,
          claims: [{ path: ['family_name'] }, { path: ['given_name'] }, { path: ['birth_date'] }],
        },
      ],
    });
  });

  it('when two requests are built, then each carries its own fresh nonce and state', async () => {
    const identity = await createVerifierIdentity(HOST);
    const a = await build(identity);
    const b = await build(identity);
    const claimsOf = (jwt: string) =>
      JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));
    expect(claimsOf(a.requestObject)).toEqual(expect.objectContaining({ nonce: a.nonce, state: a.state }));
    expect(new Set([a.nonce, a.state, b.nonce, b.state]).size).toBe(4);
    expect(a.nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('when built, then the authorization request is openid4vp://?client_id=…&request_uri=…', async () => {
    const { authorizationRequest } = await build(await createVerifierIdentity(HOST));
    const url = new URL(authorizationRequest);
    expect(url.protocol).toBe('openid4vp:');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      client_id: `x509_san_dns:${HOST}`,
      request_uri: `${base}/request`,
    });
  });

  it('when the response_uri is on another host than the client_id, then it is refused', async () => {
    const identity = await createVerifierIdentity(HOST);
    await expect(
      buildAuthorizationRequest({
        identity,
        responseUri: 'https://elsewhere.example/response',
        requestUri: `${base}/request`,
        nonce: 'n',
        state: 's',
      }),
    ).rejects.toThrow(/not on verifier\.example/);
  });

  it('when an operator key and certificate are given as PEM, then they sign; a certificate for another host is refused', async () => {
    const { keys, cert } = await selfSignedCertificate(HOST);
    const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
    const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----`;
    const identity = await verifierIdentityFromPem(HOST, keyPem, cert.toString('pem'));
    const { requestObject } = await build(identity);
    await expect(compactVerify(requestObject, await cert.publicKey.export())).resolves.toBeDefined();
    await expect(verifierIdentityFromPem('other.example', keyPem, cert.toString('pem'))).rejects.toThrow(
      /does not name other\.example/,
    );
  });
});
