import { request } from 'node:http';
import { startEmbedded, type EmbeddedStack } from '../../scripts/embedded';
import { apiClient, createTenant } from '../support/stack';

/**
 * The development sign-in of `npm start` (the dashboard's "pick a subject"), through the embedded
 * gateway: only requests addressed to a loopback Host with a JSON body get a token, the token is
 * valid in its own tenant only, and a gateway listening on a non-loopback HOST has no sign-in at all.
 */
describe('embedded mode (npm start): the development sign-in', () => {
  let stack: EmbeddedStack;
  let exposed: EmbeddedStack;
  beforeAll(async () => {
    [stack, exposed] = await Promise.all([
      startEmbedded({ PORT: '0', PATH: process.env.PATH }, true),
      startEmbedded({ PORT: '0', HOST: '0.0.0.0', PATH: process.env.PATH }, true),
    ]);
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    await exposed?.stop();
  });

  /** One request to the gateway with exactly these headers (fetch would not send a Host of our choosing). */
  const raw = (
    base: string,
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: string,
  ): Promise<{ status: number; body: any }> =>
    new Promise((resolve, reject) => {
      const url = new URL(base);
      const req = request(
        { host: '127.0.0.1', port: url.port, method, path, headers, setHost: !('host' in headers) },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () =>
            resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  it('when a page of another site reaches the sign-in (a foreign Host, a text/plain body), then 403 or 400 and no token; from localhost with JSON, then a token valid in its own tenant only', async () => {
    const api = apiClient(stack.url);
    const operator = { gateway: { url: stack.url }, operatorToken: stack.operatorToken };
    const acme = await createTenant(operator, { name: 'Acme' });
    const other = await createTenant(operator, { name: 'Other' });
    for (const { tenant, auth } of [acme, other]) {
      const assigned = await api('POST', `/v1/tenants/${tenant.id}/role-assignments`, {
        auth,
        body: { subject_id: 'dashboard:alice', roles: ['tenant_viewer'] },
      });
      expect(assigned.status).toBe(201);
    }
    const body = JSON.stringify({ tenant_id: acme.tenant.id, subject_id: 'dashboard:alice' });
    const signIn = (headers: Record<string, string>) =>
      raw(stack.url, 'POST', '/dashboard-dev/sign-in', headers, body);

    const rebound = await signIn({ host: 'attacker.example:8080', 'content-type': 'application/json' });
    expect(rebound).toEqual({
      status: 403,
      body: {
        error: 'FORBIDDEN',
        message:
          'The development sign-in answers only requests addressed to a loopback Host (localhost, 127.x.x.x, [::1])',
      },
    });
    const listed = await raw(stack.url, 'GET', `/dashboard-dev/subjects?tenant_id=${acme.tenant.id}`, {
      host: 'attacker.example',
    });
    expect(listed.status).toBe(403);
    const plain = await signIn({ host: 'localhost', 'content-type': 'text/plain' });
    expect(plain).toEqual({
      status: 400,
      body: { error: 'BAD_REQUEST', message: 'Content-Type must be application/json' },
    });

    const signedIn = await signIn({ 'content-type': 'application/json' });
    expect(signedIn.status).toBe(200);
    const asAlice = (tenant: string) =>
      api('GET', '/v1/me', { auth: signedIn.body.token, headers: { 'x-tenant-id': tenant } });
    expect((await asAlice(acme.tenant.id)).body).toMatchObject({
      tenant_id: acme.tenant.id,
      subject_id: 'dashboard:alice',
    });
    const elsewhere = await asAlice(other.tenant.id);
    expect({ status: elsewhere.status, body: elsewhere.body }).toEqual({
      status: 401,
      body: { error: 'UNAUTHORIZED', message: 'This token was issued for another tenant' },
    });
    expect((await api('GET', '/dashboard/config.json')).body).toMatchObject({ devSignIn: true });
  });

  it('when npm start listens on a non-loopback HOST, then there is no development sign-in and config.json says so', async () => {
    const api = apiClient(exposed.url);
    expect((await api('GET', '/dashboard/config.json')).body).toMatchObject({ devSignIn: false });
    const signIn = await raw(
      exposed.url,
      'POST',
      '/dashboard-dev/sign-in',
      { host: 'localhost', 'content-type': 'application/json' },
      JSON.stringify({ tenant_id: 'tnt_01jaaaaaaaaaaaaaaaaaaaaaaa', subject_id: 'dashboard:alice' }),
    );
    expect(signIn).toEqual({ status: 404, body: { error: 'NOT_FOUND', message: 'Route not found' } });
  });
});
