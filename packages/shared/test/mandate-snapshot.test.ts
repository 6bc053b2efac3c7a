import { effectiveState, snapshotKey } from '../src/mandate/mandate-snapshot';

describe('the mandate snapshot contract', () => {
  it('when a key is built, then it is the prefix, the tenant and the mandate joined as both services read it', () => {
    expect(snapshotKey('mandate:snapshot:', 'tnt_1', 'mdt_2')).toBe('mandate:snapshot:tnt_1:mdt_2');
  });

  const now = new Date('2026-01-01T00:00:00.000Z');
  it.each([
    ['ACTIVE', '2025-12-31T23:59:59.999Z', 'EXPIRED'],
    ['ACTIVE', '2026-01-01T00:00:00.000Z', 'EXPIRED'],
    ['ACTIVE', '2026-01-01T00:00:00.001Z', 'ACTIVE'],
    ['SUSPENDED', '2025-12-31T00:00:00.000Z', 'EXPIRED'],
    ['REVOKED', '2025-12-31T00:00:00.000Z', 'REVOKED'],
    ['ACTIVE', null, 'ACTIVE'],
    ['ACTIVE', undefined, 'ACTIVE'],
  ] as const)('when %s expires at %s, then a reader sees %s', (state, expiresAt, seen) => {
    expect(effectiveState({ state, expires_at: expiresAt }, now)).toBe(seen);
  });
});
