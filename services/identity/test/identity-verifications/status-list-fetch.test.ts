import { createServer, type Server, type AddressInfo } from 'node:net';
import { checkPresentation } from '../../src/identity-verifications/check-presentation';
import { createTestPidIssuer } from '@mandate/test-wallet';
import { statusListFetcher } from '../../src/identity-verifications/wallet-config';
import { buildFixture, walletAnswer, type Fixture } from './support';

/**
 * The status list is named by the credential: the fetcher that production uses must not let a
 * presented credential make the service connect to its own network (here: a loopback listener).
 */
describe('status list fetch of a presented credential', () => {
  let listener: Server;
  let port: number;
  let connections = 0;
  beforeAll(async () => {
    listener = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => listener.close(() => resolve())));
  beforeEach(() => {
    connections = 0;
  });

  /** A trusted issuer whose credentials name a status list at `issuerUrl`/status-lists/1. */
  async function fixtureAt(issuerUrl: string, fetchStatusList: (uri: string) => Promise<string>) {
    const base: Fixture = await buildFixture();
    const issuer = await createTestPidIssuer({ issuer: issuerUrl });
    return {
      ...base,
      issuer,
      options: { ...base.options, trustedIssuers: [issuer.trustEntry], fetchStatusList },
    };
  }

  async function presentTo(fixture: Fixture) {
    // 'revoked' only makes the wallet's credential carry a status list reference; the list it
    // names is never fetched here.
    const { session, response } = await walletAnswer(fixture, { misbehave: 'revoked' });
    return checkPresentation(session, response, fixture.options);
  }

  it.each([
    ['a loopback address', () => `https://127.0.0.1:${port}`],
    ['an IPv4-mapped loopback address', () => `https://[::ffff:127.0.0.1]:${port}`],
    ['localhost', () => `https://localhost:${port}`],
  ])(
    'when the status list uri names %s, then FAILED CREDENTIAL_REVOKED (not allowed) and no connection reaches it',
    async (_name, issuerUrl) => {
      const result = await presentTo(await fixtureAt(issuerUrl(), statusListFetcher()));
      expect(result).toEqual(
        expect.objectContaining({
          status: 'FAILED',
          reason: 'CREDENTIAL_REVOKED',
          detail: expect.stringContaining('ADDRESS_NOT_ALLOWED'),
        }),
      );
      expect(connections).toBe(0);
    },
  );

  it('when the status list host resolves to 127.0.0.1, then FAILED and no connection reaches it', async () => {
    const lookup = jest.fn(async () => ['127.0.0.1']);
    const fixture = await fixtureAt(`https://status.issuer.example:${port}`, statusListFetcher({ lookup }));
    const result = await presentTo(fixture);
    expect(result).toEqual(
      expect.objectContaining({
        status: 'FAILED',
        reason: 'CREDENTIAL_REVOKED',
        detail: expect.stringContaining('resolves to 127.0.0.1'),
      }),
    );
    expect(lookup).toHaveBeenCalledWith('status.issuer.example');
    expect(connections).toBe(0);
  });
});
