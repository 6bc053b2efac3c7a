import { internalRoutes as identityInternal } from '@mandate/identity';
import { internalRoutes as mandatesInternal } from '@mandate/mandates';
import type { InternalRouteContract } from '@mandate/shared/contract';
import { buildPublicOpenApi, CONTRACTS } from '@mandate/gateway';

/**
 * The internal routes are contracts of the service that answers them (called through
 * ContractClient), and never public: not in the gateway's table, not in the document.
 */
const INTERNAL: InternalRouteContract[] = [
  ...Object.values(identityInternal),
  ...Object.values(mandatesInternal),
];

describe('internal route contracts', () => {
  it('when the internal routes are read, then each is marked internal, under /internal/v1, named by its key', () => {
    expect(INTERNAL.length).toBeGreaterThan(0);
    for (const route of INTERNAL) {
      expect(route).toMatchObject({ internal: true, path: expect.stringMatching(/^\/internal\/v1\//) });
      expect(Object.keys(route.responses).every((status) => Number(status) < 300)).toBe(true);
    }
    expect(Object.keys(identityInternal)).toEqual(Object.values(identityInternal).map((r) => r.operationId));
  });

  it('when the public document and the gateway table are built, then no internal route is in either', () => {
    const paths = Object.keys((buildPublicOpenApi() as { paths: Record<string, unknown> }).paths);
    expect(paths.filter((p) => p.startsWith('/internal'))).toEqual([]);
    expect(CONTRACTS.filter((c) => c.path.startsWith('/internal') || 'internal' in c)).toEqual([]);
    const operationIds = new Set(CONTRACTS.map((c) => c.operationId));
    expect(INTERNAL.filter((r) => operationIds.has(r.operationId))).toEqual([]);
  });
});
