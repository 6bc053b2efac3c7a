import { newId } from '@mandate/shared/core';
import { callerFor } from '@mandate/shared/testing';
import { identityStoreAdapters, operator, identityForSuite, system } from './helpers';

/** How the gateway forwards a public call: no tenant, actor system. */
const anonymous = system;

describe.each(identityStoreAdapters())('identity: onboarding (component, $name store)', (adapter) => {
  const svc = identityForSuite({}, adapter);

  const request = (body: Record<string, unknown> = {}) =>
    svc.call('POST', '/v1/onboarding/request', {
      caller: anonymous,
      body: { organization_name: 'Globex', contact_email: 'ops@globex.example.com', ...body },
    });

  it('when an organisation asks, then 202 {id, status PENDING, created_at} and ONBOARDING_REQUESTED without the email', async () => {
    const res = await request({ country: 'DE', use_case: 'AI agents paying invoices' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^onb_[0-9a-z]{26}$/),
      status: 'PENDING',
      created_at: expect.any(String),
    });
    const event = svc.publisher.events.find((e) => e.resource?.id === res.body.id);
    expect(event).toMatchObject({
      type: 'ONBOARDING_REQUESTED',
      tenant_id: null,
      data: { organization_name: 'Globex', country: 'DE', status: 'PENDING' },
    });
    expect(JSON.stringify(event)).not.toContain('ops@globex');
  });

  it.each([
    ['no organisation name', { organization_name: undefined }, 'organization_name is required'],
    ['a blank organisation name', { organization_name: '   ' }, 'organization_name must not be empty'],
    [
      'a 201-character name',
      { organization_name: 'x'.repeat(201) },
      'organization_name must be at most 200 characters',
    ],
    [
      'an address without @',
      { contact_email: 'ops.globex.com' },
      'contact_email: must be a valid email address',
    ],
    [
      'an address without a domain dot',
      { contact_email: 'ops@localhost' },
      'contact_email: must be a valid email address',
    ],
    [
      'an address with spaces',
      { contact_email: 'o ps@globex.com' },
      'contact_email: must be a valid email address',
    ],
    [
      'an address with two @',
      { contact_email: 'a@b@globex.com' },
      'contact_email: must be a valid email address',
    ],
    [
      'a 65-character local part',
      { contact_email: `${'a'.repeat(65)}@globex.com` },
      'contact_email: must be a valid email address',
    ],
    ['a lowercase country', { country: 'de' }, 'country: must be an ISO 3166-1 alpha-2 code such as DE'],
    ['a 1001-character use case', { use_case: 'x'.repeat(1001) }, 'use_case must be at most 1000 characters'],
    ['an unknown field', { plan: 'enterprise' }, 'plan is not allowed'],
  ])('when the request has %s, then 400 naming the field', async (_label, body, message) => {
    expect(await request(body)).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST', message } });
  });

  it('when the operator lists by status, then the pending request is there, newest first, with its contact', async () => {
    const first = await request({ organization_name: 'First' });
    const second = await request({ organization_name: 'Second' });
    const res = await svc.call('GET', '/v1/platform/onboarding-requests?status=PENDING&limit=100', {
      caller: operator,
    });
    expect(res.status).toBe(200);
    const ids = res.body.data.map((r: { id: string }) => r.id);
    expect(ids.indexOf(second.body.id)).toBeLessThan(ids.indexOf(first.body.id));
    expect(res.body.data.find((r: { id: string }) => r.id === first.body.id)).toEqual({
      id: first.body.id,
      organization_name: 'First',
      contact_email: 'ops@globex.example.com',
      country: null,
      use_case: null,
      status: 'PENDING',
      created_at: first.body.created_at,
      decided_at: null,
      tenant_id: null,
      rejection_reason: null,
    });
  });

  it('when the operator approves with an admin subject, then the tenant, its key and tenant_admin exist; approving again is 409', async () => {
    const { body } = await request({ organization_name: 'Initech' });
    const res = await svc.call('POST', `/v1/platform/onboarding-requests/${body.id}/approve`, {
      caller: operator,
      body: { plan: 'enterprise', admin_subject_id: 'dashboard:peter' },
    });
    expect(res.status).toBe(201);
    const tenantId = res.body.tenant.id;
    expect(res.body).toMatchObject({
      onboarding_request: {
        id: body.id,
        status: 'APPROVED',
        tenant_id: tenantId,
        decided_at: expect.any(String),
      },
      tenant: { name: 'Initech', plan: 'enterprise', status: 'active' },
      api_key: { api_key: expect.stringMatching(/^msk_/), status: 'active' },
      role_assignment: { subject_id: 'dashboard:peter', roles: ['tenant_admin'], tenant_id: tenantId },
    });
    // Each event once by id (at-least-once: the outbox poll may also publish the decision's event,
    // and before the tenant's when its tick falls between the two writes; the audit store dedupes by id).
    const published = new Map(svc.publisher.forTenant(tenantId).map((e) => [e.id, e.type]));
    expect([...published.values()].sort()).toEqual([
      'API_KEY_CREATED',
      'ONBOARDING_APPROVED',
      'TENANT_CREATED',
      'TENANT_ROLE_ASSIGNED',
    ]);
    const again = await svc.call('POST', `/v1/platform/onboarding-requests/${body.id}/approve`, {
      caller: operator,
    });
    expect(again).toMatchObject({
      status: 409,
      body: { error: 'CONFLICT', message: 'Onboarding request is already approved' },
    });
    expect(
      await svc.call('POST', `/v1/platform/onboarding-requests/${body.id}/reject`, { caller: operator }),
    ).toMatchObject({ status: 409 });
  });

  it('when two approvals race, then exactly one creates a tenant', async () => {
    const { body } = await request();
    const results = await Promise.all(
      [0, 1, 2].map(() =>
        svc.call('POST', `/v1/platform/onboarding-requests/${body.id}/approve`, { caller: operator }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
  });

  it('when the operator approves without a body, then the tenant is beta, named after the organisation, without an assignment', async () => {
    const { body } = await request({ organization_name: 'Hooli' });
    const res = await svc.call('POST', `/v1/platform/onboarding-requests/${body.id}/approve`, {
      caller: operator,
    });
    expect(res.body).toMatchObject({ tenant: { name: 'Hooli', plan: 'beta' }, role_assignment: null });
  });

  it('when the operator rejects, then REJECTED with the reason and ONBOARDING_REJECTED; approving later is 409', async () => {
    const { body } = await request();
    const res = await svc.call('POST', `/v1/platform/onboarding-requests/${body.id}/reject`, {
      caller: operator,
      body: { reason: 'not a real company' },
    });
    expect(res).toMatchObject({
      status: 200,
      body: { status: 'REJECTED', rejection_reason: 'not a real company', tenant_id: null },
    });
    expect(
      svc.publisher.events.find((e) => e.resource?.id === body.id && e.type === 'ONBOARDING_REJECTED'),
    ).toMatchObject({
      tenant_id: null,
      data: { reason: 'not a real company' },
    });
    expect(
      await svc.call('POST', `/v1/platform/onboarding-requests/${body.id}/approve`, { caller: operator }),
    ).toMatchObject({ status: 409, body: { message: 'Onboarding request is already rejected' } });
  });

  it('when an unknown request is decided, then 404', async () => {
    for (const action of ['approve', 'reject'])
      expect(
        await svc.call('POST', `/v1/platform/onboarding-requests/${newId('onb')}/${action}`, {
          caller: operator,
        }),
      ).toMatchObject({ status: 404, body: { message: 'Onboarding request not found' } });
  });

  it('when a tenant credential or the public calls the operator routes, then 403', async () => {
    const { body } = await request();
    const tenant = callerFor(newId('tnt'));
    for (const caller of [tenant, anonymous]) {
      expect(await svc.call('GET', '/v1/platform/onboarding-requests', { caller })).toMatchObject({
        status: 403,
      });
      expect(
        await svc.call('POST', `/v1/platform/onboarding-requests/${body.id}/approve`, { caller }),
      ).toMatchObject({ status: 403 });
    }
  });
});
