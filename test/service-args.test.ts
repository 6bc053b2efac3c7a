import { defaultVerifyReplicas, serviceArgs } from '../scripts/services';

describe('serviceArgs (the launcher)', () => {
  const saved = process.env.SERVICE_NODE_FLAGS;
  afterEach(() => {
    if (saved === undefined) delete process.env.SERVICE_NODE_FLAGS;
    else process.env.SERVICE_NODE_FLAGS = saved;
  });

  it('when SERVICE_NODE_FLAGS is set, then its flags come after the service V8 flags and before the entry, which NODE_OPTIONS could not carry', () => {
    process.env.SERVICE_NODE_FLAGS = ' --single-threaded-gc  --trace-gc-nvp ';
    expect(serviceArgs('verify', { kind: 'dist', distDir: '/d' })).toEqual([
      '--no-allocation-site-pretenuring',
      '--single-threaded-gc',
      '--trace-gc-nvp',
      '--enable-source-maps',
      '/d/verify/main.js',
    ]);
  });

  it('when SERVICE_NODE_FLAGS is unset, then a request-path service gets its own V8 flags and the entry', () => {
    delete process.env.SERVICE_NODE_FLAGS;
    expect(serviceArgs('gateway', { kind: 'dist', distDir: '/d' })).toEqual([
      '--no-allocation-site-pretenuring',
      '--enable-source-maps',
      '/d/gateway/main.js',
    ]);
    expect(serviceArgs('audit', { kind: 'dist', distDir: '/d' })).toEqual([
      '--enable-source-maps',
      '/d/audit/main.js',
    ]);
  });
});

describe('defaultVerifyReplicas (VERIFY_REPLICAS unset)', () => {
  it('when the machine has 1 to 40 CPUs, then it is one replica per two CPUs, at least 1 and at most 16', () => {
    expect([1, 2, 3, 4, 8, 32, 40].map((cpus) => defaultVerifyReplicas(cpus))).toEqual([
      1, 1, 1, 2, 4, 16, 16,
    ]);
  });
});
