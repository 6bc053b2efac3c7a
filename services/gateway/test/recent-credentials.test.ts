import { RECENT_CREDENTIAL_MS, RecentCredentials } from '../src/auth/recent-credentials';

const d = RecentCredentials.digest;

describe('gateway: the credentials that authenticated recently', () => {
  it('when a credential authenticated, then it is recent for 10 minutes from its last success, whatever the key cache TTL', () => {
    let t = 0;
    const recent = new RecentCredentials(() => t);
    recent.remember(d('Bearer tnt_a:msk_good'));
    t = RECENT_CREDENTIAL_MS - 1;
    expect(recent.has(d('Bearer tnt_a:msk_good'))).toBe(true);
    expect(recent.has(d('Bearer tnt_a:msk_other'))).toBe(false);
    recent.remember(d('Bearer tnt_a:msk_good'));
    t += RECENT_CREDENTIAL_MS - 1;
    expect(recent.has(d('Bearer tnt_a:msk_good'))).toBe(true);
    t += 1;
    expect(recent.has(d('Bearer tnt_a:msk_good'))).toBe(false);
    expect(RECENT_CREDENTIAL_MS).toBe(10 * 60_000);
  });

  it('when a credential is forgotten (it failed), then it is no longer recent', () => {
    const recent = new RecentCredentials();
    recent.remember(d('Bearer x'));
    recent.forget(d('Bearer x'));
    expect(recent.has(d('Bearer x'))).toBe(false);
  });

  it('when it is full, then the oldest success is dropped first, and it keeps no credential in clear', () => {
    const recent = new RecentCredentials(Date.now, 2);
    recent.remember(d('Bearer one-s3cr3t'));
    recent.remember(d('Bearer two-s3cr3t'));
    recent.remember(d('Bearer three-s3cr3t'));
    expect([
      recent.has(d('Bearer one-s3cr3t')),
      recent.has(d('Bearer two-s3cr3t')),
      recent.has(d('Bearer three-s3cr3t')),
    ]).toEqual([false, true, true]);
    expect(
      JSON.stringify([...(recent as unknown as { seen: Map<string, number> }).seen.keys()]),
    ).not.toContain('s3cr3t');
  });
});
