import { z } from 'zod';
import { ConfigError, commonConfigShape, env, parseConfig } from '../src/core/config';
import { DEFAULT_SNAPSHOT_PREFIX } from '../src/mandate/mandate-snapshot';
import { redisKeySpaces } from '../src/core/redis-keys';

const schema = z.object({ ...commonConfigShape, OLD_PREFIX: env.removed('REDIS_PREFIX') });

describe('REDIS_PREFIX: one namespace for every Redis key', () => {
  it('when REDIS_PREFIX is unset, then every key space is the one the separate variables had by default', () => {
    const { REDIS_PREFIX } = parseConfig(schema, {});
    expect(REDIS_PREFIX).toBe('mandate:');
    expect(redisKeySpaces(REDIS_PREFIX)).toEqual({
      rateLimits: 'mandate:rl',
      idempotency: 'mandate:idem',
      snapshots: 'mandate:snapshot:',
    });
    expect(DEFAULT_SNAPSHOT_PREFIX).toBe('mandate:snapshot:');
  });

  it('when REDIS_PREFIX is set, then every key space starts with it', () => {
    const spaces = redisKeySpaces(parseConfig(schema, { REDIS_PREFIX: 'staging:' }).REDIS_PREFIX);
    for (const space of Object.values(spaces)) expect(space.startsWith('staging:')).toBe(true);
  });

  it('when a removed prefix variable is set, then the configuration is refused and names its replacement', () => {
    expect(parseConfig(schema, { OLD_PREFIX: '' }).REDIS_PREFIX).toBe('mandate:');
    expect(() => parseConfig(schema, { OLD_PREFIX: 'x:rl' })).toThrow(ConfigError);
    expect(() => parseConfig(schema, { OLD_PREFIX: 'x:rl' })).toThrow(
      'OLD_PREFIX: was removed; set REDIS_PREFIX instead',
    );
  });
});
