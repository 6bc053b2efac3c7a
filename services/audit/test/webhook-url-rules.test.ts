import { checkWebhookUrl } from '../src/webhooks/webhook';

/**
 * docs/WEBHOOKS.md#endpoints: with WEBHOOKS_ALLOW_LOOPBACK exactly 127.0.0.1, localhost and
 * [::1] are allowed (http or https, any port); a refused URL's message never says what the host
 * resolved to.
 */
const lookups: Record<string, string[]> = {
  'vm.example': ['127.0.0.1'],
  'intranet.example': ['10.1.2.3'],
  'public.example': ['93.184.216.34'],
};
const lookup = async (host: string) => {
  const found = lookups[host];
  if (!found) throw new Error('ENOTFOUND');
  return found;
};
const outcome = (url: string, allowLoopback: boolean) =>
  checkWebhookUrl(url, { allowLoopback, lookup }).then(
    () => 'accepted',
    (err: Error) => err.message,
  );

describe('webhook URL rules (v4)', () => {
  it.each([
    'http://127.0.0.1:9/x',
    'https://127.0.0.1:9/x',
    'http://localhost:3000/hook',
    'https://localhost/hook',
    'http://[::1]:9/x',
    'https://[::1]:8443/x',
  ])('when loopback is allowed and the URL is %s, then it is accepted', async (url) => {
    expect(await outcome(url, true)).toBe('accepted');
  });

  it.each([
    'https://127.0.0.2:9/x',
    'http://127.0.0.2:9/x',
    'https://0.0.0.0:9/x',
    'https://[::ffff:127.0.0.2]/x',
    'https://vm.example/x',
  ])(
    'when loopback is allowed and the URL is %s (another loopback or unspecified address), then it is refused',
    async (url) => {
      expect(await outcome(url, true)).not.toBe('accepted');
    },
  );

  it('when a URL is refused by the address rules, then the message does not say what the host resolved to', async () => {
    const messages = await Promise.all(
      ['https://vm.example/x', 'https://intranet.example/x', 'https://10.0.0.1/x', 'https://127.0.0.1/x'].map(
        (url) => outcome(url, false),
      ),
    );
    expect(new Set(messages).size).toBe(1);
    // Not "(vm.example: loopback)": nothing about the host or the range it resolved to.
    expect(messages[0]).not.toMatch(/vm\.example|intranet|10\.|127\.|:/);
    expect(await outcome('https://public.example/x', false)).toBe('accepted');
  });
});
