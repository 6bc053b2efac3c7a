import { newId } from '@mandate/shared/core';
import { callerFor } from '@mandate/shared/testing';
import { identityStoreAdapters, operator, identityForSuite, startIdentity, system } from './helpers';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ALL_SCOPES = ['mandates:read', 'mandates:write', 'verify', 'events:read', 'tenants:admin'];

describe.each(identityStoreAdapters())('identity: tenants (component, $name store)', (adapter) => {
  const svc = identityForSuite({}, adapter);

  describe('POST /v1/platform/tenants', () => {
    it('when the operator creates a tenant, then 201 answers exactly the tenant and an initial all-scope key', async () => {
      const res = await svc.call('POST', '/v1/platform/tenants', {
        caller: operator,
        body: { name: 'Acme Corp' },
      });
      expect(res).toMatchObject({ status: 201 });
      expect(res.body).toEqual({
        tenant: {
          id: expect.stringMatching(/^tnt_[0-9a-z]{26}$/),
          name: 'Acme Corp',
          plan: 'beta',
          status: 'active',
          created_at: expect.stringMatching(ISO),
        },
        api_key: {
          key_id: expect.stringMatching(/^key_[0-9a-z]{26}$/),
          api_key: expect.stringMatching(/^msk_[0-9A-Za-z]{43}$/),
          name: 'Initial key',
          scopes: ALL_SCOPES,
          status: 'active',
          created_at: expect.stringMatching(ISO),
        },
      });
    });

    it('when a tenant is created, then TENANT_CREATED and API_KEY_CREATED carry the new tenant and the operator, without the secret', async () => {
      const { tenantId, keyId, secret } = await svc.createTenant({ plan: 'enterprise' });
      const events = svc.publisher.forTenant(tenantId);
      expect(events.map((e) => e.type)).toEqual(['TENANT_CREATED', 'API_KEY_CREATED']);
      expect(events[0]).toMatchObject({
        resource: { type: 'tenant', id: tenantId },
        actor: { type: 'operator' },
        request_id: 'req_test',
      });
      expect(events[0]!.data).toMatchObject({ name: 'Acme', plan: 'enterprise' });
      expect(events[1]).toMatchObject({
        resource: { type: 'api_key', id: keyId },
        data: { key_id: keyId, scopes: ALL_SCOPES },
      });
      expect(JSON.stringify(events)).not.toContain(secret);
    });

    it('when an admin subject is given, then it gets an active tenant_admin assignment and TENANT_ROLE_ASSIGNED is emitted', async () => {
      const subject = 'oidc:workforce:alice@example.com';
      const { tenantId } = await svc.createTenant({ admin_subject_id: subject });
      expect(svc.publisher.forTenant(tenantId).map((e) => e.type)).toEqual([
        'TENANT_CREATED',
        'API_KEY_CREATED',
        'TENANT_ROLE_ASSIGNED',
      ]);
      const assigned = svc.publisher.forTenant(tenantId)[2]!;
      expect(assigned).toMatchObject({
        resource: { type: 'role_assignment' },
        data: { subject_id: subject, roles: ['tenant_admin'] },
      });

      const res = await svc.call('POST', '/internal/v1/subjects/resolve', {
        caller: system,
        body: { tenant_id: tenantId, subject_id: subject },
      });
      expect(res).toMatchObject({ status: 200 });
      expect(res.body).toEqual({
        tenant_id: tenantId,
        subject_id: subject,
        assignment_id: assigned.resource!.id,
        roles: ['tenant_admin'],
        permissions: [
          'events:read',
          'mandates:read',
          'mandates:write',
          'tenant:read',
          'tenant:write',
          'tenants:admin',
          'verify',
        ],
        plan: 'beta',
      });
      const other = await svc.call('POST', '/internal/v1/subjects/resolve', {
        caller: system,
        body: { tenant_id: newId('tnt'), subject_id: subject },
      });
      expect(other).toMatchObject({ status: 404 });
    });

    it('when the returned secret is resolved, then it names the key, tenant, scopes, status and plan', async () => {
      const { tenantId, keyId, secret } = await svc.createTenant({ plan: 'enterprise' });
      const expected = {
        key_id: keyId,
        tenant_id: tenantId,
        scopes: ALL_SCOPES,
        status: 'active',
        plan: 'enterprise',
      };
      const plain = await svc.call('POST', '/internal/v1/keys/resolve', {
        caller: system,
        body: { api_key: secret },
      });
      expect(plain).toMatchObject({ status: 200, body: expected });
      expect(Object.keys(plain.body).sort()).toEqual(Object.keys(expected).sort());
      const scoped = await svc.call('POST', '/internal/v1/keys/resolve', {
        caller: system,
        body: { api_key: secret, tenant_id: tenantId },
      });
      expect(scoped).toMatchObject({ status: 200, body: expected });
    });

    it('when the secret is resolved with another tenant id, then 404', async () => {
      const { secret } = await svc.createTenant();
      const res = await svc.call('POST', '/internal/v1/keys/resolve', {
        caller: system,
        body: { api_key: secret, tenant_id: newId('tnt') },
      });
      expect(res).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', message: 'API key not found' } });
    });

    it('when an unknown or malformed secret is resolved, then 404', async () => {
      for (const api_key of ['msk_' + 'A'.repeat(43), 'nope', '']) {
        const res = await svc.call('POST', '/internal/v1/keys/resolve', {
          caller: system,
          body: { api_key },
        });
        expect(res).toMatchObject({ status: 404, body: { error: 'NOT_FOUND' } });
      }
    });

    it('when the resolve body lacks api_key, then 400 naming it', async () => {
      const res = await svc.call('POST', '/internal/v1/keys/resolve', { caller: system, body: {} });
      expect(res).toMatchObject({
        status: 400,
        body: { error: 'BAD_REQUEST', message: 'api_key is required' },
      });
    });

    it('when a tenant-scoped API key calls it, then 403 Operator credentials required', async () => {
      const res = await svc.call('POST', '/v1/platform/tenants', {
        caller: callerFor(newId('tnt')),
        body: { name: 'X' },
      });
      expect(res).toMatchObject({
        status: 403,
        body: { error: 'FORBIDDEN', message: 'Operator credentials required' },
      });
    });

    it('when the gateway itself (system) calls it, then 403', async () => {
      const res = await svc.call('POST', '/v1/platform/tenants', { caller: system, body: { name: 'X' } });
      expect(res).toMatchObject({ status: 403, body: { error: 'FORBIDDEN' } });
    });

    it.each([
      ['name is missing', {}, 'name is required'],
      ['name is blank', { name: '  ' }, 'name must not be empty'],
      ['name is 201 characters', { name: 'x'.repeat(201) }, 'name must be at most 200 characters'],
      ['plan is unknown', { name: 'X', plan: 'gold' }, 'plan must be one of: beta, enterprise'],
      ['a field is unknown', { name: 'X', colour: 'red' }, 'colour is not allowed'],
    ])('when %s, then 400 "%s"', async (_label, body, message) => {
      const res = await svc.call('POST', '/v1/platform/tenants', { caller: operator, body });
      expect(res).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST', message } });
      expect(Object.keys(res.body)).toEqual(['error', 'message']);
    });

    it.each(['alice', 'github:alice', 'oidc:alice', 'wallet:', 'dashboard:a b'])(
      'when admin_subject_id is %s, then 400 naming admin_subject_id',
      async (admin_subject_id) => {
        const res = await svc.call('POST', '/v1/platform/tenants', {
          caller: operator,
          body: { name: 'X', admin_subject_id },
        });
        expect(res).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST' } });
        expect(res.body.message).toMatch(/^admin_subject_id/);
      },
    );

    it.each(['wallet:0xabc', 'dashboard:user-1', 'oidc:customer-app:1234'])(
      'when admin_subject_id is %s, then it is accepted',
      async (admin_subject_id) => {
        const { tenantId } = await svc.createTenant({ admin_subject_id });
        expect(svc.publisher.forTenant(tenantId).at(-1)?.data).toMatchObject({
          subject_id: admin_subject_id,
        });
      },
    );

    it('when the body is not JSON, then 400', async () => {
      const res = await svc.call('POST', '/v1/platform/tenants', {
        caller: operator,
        body: 'name=x',
        headers: { 'content-type': 'text/plain' },
      });
      expect(res).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST' } });
    });

    it('when there is no internal token, then 401', async () => {
      const res = await svc.call('POST', '/v1/platform/tenants', { caller: null, body: { name: 'X' } });
      expect(res).toMatchObject({ status: 401, body: { error: 'UNAUTHORIZED' } });
    });

    it('when the internal token is forged, then 401', async () => {
      const res = await svc.call('POST', '/v1/platform/tenants', {
        caller: null,
        body: { name: 'X' },
        headers: { 'x-internal-token': 'eyJhbGciOiJIUzI1NiJ9.e30.x' },
      });
      expect(res).toMatchObject({
        status: 401,
        body: { error: 'UNAUTHORIZED', message: 'Invalid internal token' },
      });
    });

    it('when the method is wrong, then 405 with the envelope', async () => {
      const res = await svc.call('DELETE', '/v1/platform/tenants', { caller: operator });
      expect(res).toMatchObject({ status: 405, body: { error: 'METHOD_NOT_ALLOWED' } });
      expect(res.headers.get('allow')).toBe('POST, GET');
    });
  });

  describe('GET /v1/platform/tenants', () => {
    it('when the operator lists tenants, then newest first with exactly the tenant fields, each once across pages', async () => {
      const created = [
        (await svc.createTenant({ name: 'List One' })).body.tenant,
        (await svc.createTenant({ name: 'List Two', plan: 'enterprise' })).body.tenant,
        (await svc.createTenant({ name: 'List Three' })).body.tenant,
      ];
      const first = await svc.call('GET', '/v1/platform/tenants?limit=2', { caller: operator });
      expect(first).toMatchObject({ status: 200, body: { has_more: true, next_cursor: expect.any(String) } });
      // Other tests of this suite create tenants too: the three newest are these, newest first.
      expect(first.body.data).toEqual([created[2], created[1]]);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await svc.call(
          'GET',
          `/v1/platform/tenants?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          { caller: operator },
        );
        seen.push(...res.body.data.map((t: { id: string }) => t.id));
        cursor = res.body.next_cursor as string | null;
      } while (cursor);
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toEqual(expect.arrayContaining(created.map((t) => t.id)));
    });

    it('when a tenant-scoped caller lists tenants, then 403 and no tenant is answered', async () => {
      const { tenantId } = await svc.createTenant();
      const res = await svc.call('GET', '/v1/platform/tenants', { caller: callerFor(tenantId) });
      expect(res).toMatchObject({ status: 403, body: { error: 'FORBIDDEN' } });
      expect(res.body.data).toBeUndefined();
    });

    it('when the query is invalid, then 400 in the envelope', async () => {
      for (const query of ['?limit=0', '?limit=abc', '?status=active', '?cursor=%%%']) {
        const res = await svc.call('GET', `/v1/platform/tenants${query}`, { caller: operator });
        expect(res).toMatchObject({
          status: 400,
          body: { error: 'BAD_REQUEST', message: expect.any(String) },
        });
      }
    });
  });

  describe('GET /v1/tenants/:tenantId', () => {
    it('when the caller reads its own tenant, then 200 with exactly the tenant fields', async () => {
      const { tenantId, body } = await svc.createTenant({ name: 'Own', plan: 'enterprise' });
      const res = await svc.call('GET', `/v1/tenants/${tenantId}`, { caller: callerFor(tenantId) });
      expect(res).toMatchObject({ status: 200 });
      expect(res.body).toEqual(body.tenant);
      expect(Object.keys(res.body).sort()).toEqual(['created_at', 'id', 'name', 'plan', 'status']);
    });

    it('when the caller reads another tenant, then 404 as if absent', async () => {
      const { tenantId } = await svc.createTenant();
      const res = await svc.call('GET', `/v1/tenants/${tenantId}`, { caller: callerFor(newId('tnt')) });
      expect(res).toMatchObject({ status: 404, body: { error: 'NOT_FOUND' } });
    });

    it('when the method is wrong, then 405', async () => {
      const tenantId = newId('tnt');
      const res = await svc.call('DELETE', `/v1/tenants/${tenantId}`, { caller: callerFor(tenantId) });
      expect(res).toMatchObject({ status: 405, body: { error: 'METHOD_NOT_ALLOWED' } });
    });
  });

  describe('GET /internal/v1/tenants/:tenantId', () => {
    it('when the gateway-era tenant lookup is called, then 404: the route had no caller and is gone', async () => {
      const { tenantId } = await svc.createTenant({ plan: 'enterprise' });
      const res = await svc.call('GET', `/internal/v1/tenants/${tenantId}`, { caller: system });
      expect(res).toMatchObject({ status: 404, body: { error: 'NOT_FOUND' } });
    });
  });

  describe('health and unknown paths', () => {
    it('when /healthz and /readyz are called without a token, then they answer 200', async () => {
      expect(await svc.call('GET', '/healthz', { caller: null })).toMatchObject({
        status: 200,
        body: { status: 'ok' },
      });
      expect(await svc.call('GET', '/readyz', { caller: null })).toMatchObject({
        status: 200,
        body: { status: 'ready' },
      });
    });

    it('when a path is unknown, then 404 NOT_FOUND', async () => {
      const res = await svc.call('GET', '/v1/nope', { caller: system });
      expect(res).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', message: 'Route not found' } });
    });
  });
});

describe('identity: publishing failures (component)', () => {
  it('when the publisher throws, then the tenant is still created and answered 201', async () => {
    const svc = await startIdentity({
      publisher: {
        kind: 'rabbitmq',
        publish: async () => Promise.reject(new Error('broker down')),
        close: async () => undefined,
      },
    });
    try {
      const res = await svc.call('POST', '/v1/platform/tenants', {
        caller: operator,
        body: { name: 'Resilient' },
      });
      expect(res).toMatchObject({ status: 201 });
      const get = await svc.call('GET', `/v1/tenants/${res.body.tenant.id}`, {
        caller: callerFor(res.body.tenant.id),
      });
      expect(get).toMatchObject({ status: 200 });
    } finally {
      await svc.stop();
    }
  });
});
