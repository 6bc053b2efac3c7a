import { callerOf, implement, type Implementation } from '@mandate/shared/http';
import { createdApiKeyView } from '../api-keys/http';
import { pick } from '../http/view';
import { routes } from '../contract';
import type { Deps } from '../deps';
import { pageView, pageWindow } from '../http/pages';
import { pathTenant, requireOperator } from '../http/tenancy';
import type { Tenant } from './tenant';
import { createTenant, getTenant, listTenants } from './tenants';

/** The one place a stored tenant becomes a response body. */
export const tenantView = (t: Tenant) => pick(t, ['id', 'name', 'plan', 'status', 'created_at']);

export const tenantHandlers = (deps: Deps): Implementation[] => [
  implement(routes.createTenant)(async ({ body }, req) => {
    requireOperator(req);
    const value = await createTenant(
      deps,
      {
        name: body.name,
        plan: body.plan,
        adminSubjectId: body.admin_subject_id,
      },
      callerOf(req),
    );
    return {
      status: 201,
      body: { tenant: tenantView(value.tenant), api_key: createdApiKeyView(value.issued) },
    };
  }),

  implement(routes.listTenants)(async ({ query }, req) => {
    requireOperator(req);
    const page = await listTenants(deps, pageWindow(query));
    return { status: 200, body: pageView(page, tenantView) };
  }),

  implement(routes.getTenant)(async (_input, req) => ({
    status: 200,
    body: tenantView(await getTenant(deps, pathTenant(req))),
  })),
];
