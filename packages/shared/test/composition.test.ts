import { compose } from '../src/service/composition';

describe('compose (the one composition rule)', () => {
  const built: string[] = [];
  const rule = (variable: string | undefined, override: string | undefined) =>
    compose({
      variable,
      fromVariable: (url) => {
        built.push(`variable ${url}`);
        return `adapter for ${url}`;
      },
      override,
      local: () => {
        built.push('default');
        return 'local default';
      },
    });

  beforeEach(() => built.splice(0));

  it('when the variable and an override are both given, then the variable wins and the override is ignored', async () => {
    expect(await rule('amqp://broker', 'shared bus')).toEqual({
      adapter: 'adapter for amqp://broker',
      chosen: 'variable',
    });
    expect(built).toEqual(['variable amqp://broker']);
  });

  it('when only an override is given, then the override is used and nothing is built', async () => {
    expect(await rule(undefined, 'shared bus')).toEqual({ adapter: 'shared bus', chosen: 'override' });
    expect(built).toEqual([]);
  });

  it('when neither is given, then the local default is built', async () => {
    expect(await rule(undefined, undefined)).toEqual({ adapter: 'local default', chosen: 'default' });
    expect(built).toEqual(['default']);
  });

  it('when building from the variable fails, then the error propagates and no fallback is built', async () => {
    await expect(
      compose({
        variable: 'redis://down',
        fromVariable: async () => {
          throw new Error('connection refused');
        },
        override: 'override',
        local: () => 'local default',
      }),
    ).rejects.toThrow('connection refused');
  });
});
