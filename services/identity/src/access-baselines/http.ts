import { callerOf, implement, type Implementation } from '@mandate/shared/http';
import { pick } from '../http/view';
import { routes } from '../contract';
import type { Deps } from '../deps';
import { pathTenant } from '../http/tenancy';
import type { AccessBaseline } from './access-baseline';
import { getAccessBaseline, saveAccessBaseline } from './access-baselines';

/** The one place a stored access baseline becomes a response body. */
export const accessBaselineView = (b: AccessBaseline) =>
  pick(b, ['tenant_id', 'saved_at', 'saved_by', 'snapshot']);

export const accessBaselineHandlers = (deps: Deps): Implementation[] => [
  implement(routes.getAccessBaseline)(async (_input, req) => {
    const tenantId = pathTenant(req);
    const baseline = await getAccessBaseline(deps, tenantId);
    return {
      status: 200,
      body: baseline
        ? accessBaselineView(baseline)
        : { tenant_id: tenantId, saved_at: null, saved_by: null, snapshot: null },
    };
  }),
  implement(routes.putAccessBaseline)(async (_input, req) => {
    const tenantId = pathTenant(req);
    return {
      status: 200,
      body: accessBaselineView(await saveAccessBaseline(deps, tenantId, callerOf(req))),
    };
  }),
];
