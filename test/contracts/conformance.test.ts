import { buildMandate } from '@mandate/mandates/testing';
import { contractViolations, type RecordedResponse } from '../support/contract-recorder';

// A well-formed mandate as the API answers it; its id is the one the recorded paths name.
const MANDATE = buildMandate({ id: 'mdt_1', tenant_id: 'tnt_1' });
const answer = (method: string, path: string, status: number, body: unknown): RecordedResponse => ({
  method,
  path,
  status,
  contentType: 'application/json',
  body: JSON.stringify(body),
});

/** The check the route-security and walk-through runs end with, shown to fail where it must. */
describe('contractViolations', () => {
  it('when answers match their routes, then there is nothing to say', () => {
    expect(
      contractViolations([
        answer('GET', '/v1/mandates/mdt_1', 200, MANDATE),
        answer('POST', '/mandates/mdt_1/revoke', 409, { error: 'CONFLICT', message: 'no' }),
        answer('GET', '/v1/nope', 404, { error: 'NOT_FOUND', message: 'Route not found' }),
        answer('DELETE', '/v1/mandates', 405, { error: 'METHOD_NOT_ALLOWED', message: 'use GET, POST' }),
        answer('GET', '/healthz', 200, { status: 'ok' }),
      ]),
    ).toEqual([]);
  });

  it('when a success body lacks a member, then the route and the member are named', () => {
    const { signature: _dropped, ...unsigned } = MANDATE;
    expect(contractViolations([answer('GET', '/v1/mandates/mdt_1?x=1', 200, unsigned)])).toEqual([
      'GET /v1/mandates/mdt_1?x=1 → 200 (getMandate): the body does not match the contract: signature: Invalid input: expected object, received undefined',
    ]);
  });

  it('when a status is not declared for the route, or an error body has more than {error, message}, then it is named', () => {
    expect(
      contractViolations([
        answer('GET', '/v1/.well-known/jwks.json', 401, { error: 'UNAUTHORIZED', message: 'x' }),
        answer('GET', '/v1/mandates/mdt_1', 404, { error: 'NOT_FOUND', message: 'x', detail: 1 }),
        answer('GET', '/v1/mandates', 201, MANDATE),
      ]),
    ).toEqual([
      'GET /v1/.well-known/jwks.json → 401 (getJwks): status 401 is not declared for this route',
      'GET /v1/mandates/mdt_1 → 404 (getMandate): the error body is not exactly {error, message}: {"error":"NOT_FOUND","message":"x","detail":1}',
      'GET /v1/mandates → 201 (listMandates): status 201 is not declared for this route',
    ]);
  });
});
