import amqp from 'amqplib';
import { Redis } from 'ioredis';
import { newId } from '@mandate/shared/core';
import { amqpTopology, type AuditEvent } from '@mandate/shared/events';
import { deleteAmqpTopology } from '@mandate/shared/testing';
import { startEmbedded, type EmbeddedStack } from '../../scripts/embedded';
import { AMQP_URL, REDIS_URL, apiClient, eventually } from '../support/stack';

/**
 * `npm start` with AMQP_URL and REDIS_URL set: every service must publish to the broker (not to
 * the launcher's in-process bus, which nothing consumes then), so every event of the README
 * walk-through reaches /v1/events. Own AMQP namespace and Redis prefix, both deleted afterwards.
 */
describe('embedded mode (npm start) with AMQP_URL and REDIS_URL', () => {
  const namespace = `test-${newId('req')}`;
  const topology = amqpTopology(namespace);
  const redisPrefix = `test:${newId('req')}`;
  let stack: EmbeddedStack | undefined;

  afterAll(async () => {
    await stack?.stop();
    await deleteAmqpTopology(topology, AMQP_URL);
    const redis = new Redis(REDIS_URL);
    try {
      const found = await redis.keys(`${redisPrefix}:*`);
      if (found.length) await redis.del(...found);
    } finally {
      await redis.quit();
    }
  }, 30_000);

  it('when the walk-through runs, then every event type it produces reaches /v1/events (platform ones, status-list publications included, on the broker)', async () => {
    stack = await startEmbedded(
      {
        PORT: '0',
        PATH: process.env.PATH,
        AMQP_URL,
        AMQP_NAMESPACE: namespace,
        REDIS_URL,
        REDIS_PREFIX: `${redisPrefix}:`,
      },
      true,
    );
    const api = apiClient(stack.url);
    const operator = stack.operatorToken;

    // Onboarding requests precede any tenant (tenant_id null): no tenant can list them, so they are
    // checked on the broker, where the audit consumer reads them.
    const connection = await amqp.connect(AMQP_URL);
    const platformEvents: AuditEvent[] = [];
    try {
      const ch = await connection.createChannel();
      const { queue } = await ch.assertQueue('', { exclusive: true, autoDelete: true });
      for (const type of ['ONBOARDING_REQUESTED', 'ONBOARDING_REJECTED', 'STATUS_LIST_PUBLISHED'])
        await ch.bindQueue(queue, topology.exchange, topology.routingKey(type));
      await ch.consume(queue, (msg) => {
        if (!msg) return;
        const body = JSON.parse(msg.content.toString()) as AuditEvent | AuditEvent[];
        platformEvents.push(...(Array.isArray(body) ? body : [body]));
      });

      const created = await api('POST', '/v1/platform/tenants', {
        auth: operator,
        body: { name: 'Acme', plan: 'beta', admin_subject_id: 'dashboard:alice' },
      });
      expect(created.status).toBe(201);
      const tenantId: string = created.body.tenant.id;
      const auth = `${tenantId}:${created.body.api_key.api_key}`;
      const keys = `/v1/tenants/${tenantId}/api-keys`;

      const ci = await api('POST', keys, { auth, body: { name: 'ci', scopes: ['mandates:read'] } });
      expect(ci.status).toBe(201);
      const rotated = await api('POST', `${keys}/${ci.body.key_id}/rotate`, { auth });
      expect(rotated.status).toBe(201);
      expect((await api('POST', `${keys}/${rotated.body.key_id}/activate`, { auth })).status).toBe(200);
      expect((await api('POST', `${keys}/${rotated.body.key_id}/revoke`, { auth })).status).toBe(200);

      const roles = `/v1/tenants/${tenantId}/role-assignments`;
      const bob = await api('POST', roles, {
        auth,
        body: { subject_id: 'dashboard:bob', roles: ['tenant_viewer'] },
      });
      expect(bob.status).toBe(201);
      expect((await api('POST', `${roles}/${bob.body.id}/revoke`, { auth })).status).toBe(200);

      const widget = await api('PUT', `/v1/tenants/${tenantId}/widget-config`, {
        auth,
        body: { allowed_origins: ['https://shop.example.com'] },
      });
      expect(widget.status).toBe(200);

      const mandate = await api('POST', '/v1/mandates', {
        auth,
        body: { principal: 'user_alice', delegate: 'agent_42', scope: { actions: ['payments:*'] } },
      });
      expect(mandate.status).toBe(201);
      const mandateId: string = mandate.body.id;
      const verify = await api('POST', '/v1/verify', {
        auth,
        body: { mandate_id: mandateId, action: 'payments:create' },
      });
      expect(verify.body).toMatchObject({ decision: 'ALLOW' });
      for (const step of ['suspend', 'reactivate', 'revoke'])
        expect((await api('POST', `/v1/mandates/${mandateId}/${step}`, { auth })).status).toBe(200);
      // Serving the mandate's status list publishes it: a platform event for the audit trail too.
      const listPath = new URL(mandate.body.status.status_list.uri as string).pathname;
      expect((await fetch(`${stack.url}${listPath}`)).status).toBe(200);
      // The evidence bundle reads the mandate's events: wait until the lifecycle reached audit.
      await eventually(
        async () => {
          const res = await api('GET', `/v1/events?resource_id=${mandateId}&type=MANDATE_REVOKED`, { auth });
          return res.body.data?.length === 1 ? true : undefined;
        },
        15_000,
        'MANDATE_REVOKED in /v1/events',
      );
      expect((await api('GET', `/v1/mandates/${mandateId}/evidence`, { auth })).status).toBe(200);

      const approvedRequest = await api('POST', '/v1/onboarding/request', {
        body: { organization_name: 'Globex', contact_email: 'ops@globex.example.com' },
      });
      expect(approvedRequest.status).toBe(202);
      const approved = await api(
        'POST',
        `/v1/platform/onboarding-requests/${approvedRequest.body.id}/approve`,
        {
          auth: operator,
          body: {},
        },
      );
      expect(approved.status).toBe(201);
      const rejectedRequest = await api('POST', '/v1/onboarding/request', {
        body: { organization_name: 'Initech', contact_email: 'ops@initech.example.com' },
      });
      expect(
        (
          await api('POST', `/v1/platform/onboarding-requests/${rejectedRequest.body.id}/reject`, {
            auth: operator,
            body: { reason: 'test' },
          })
        ).status,
      ).toBe(200);

      const wanted = [
        'TENANT_CREATED',
        'API_KEY_CREATED',
        'API_KEY_ROTATED',
        'API_KEY_ACTIVATED',
        'API_KEY_REVOKED',
        'TENANT_ROLE_ASSIGNED',
        'TENANT_ROLE_REVOKED',
        'WIDGET_CONFIG_UPDATED',
        'MANDATE_CREATED',
        'MANDATE_SUSPENDED',
        'MANDATE_REACTIVATED',
        'MANDATE_REVOKED',
        'VERIFICATION_PERFORMED',
        'EVIDENCE_EXPORTED',
      ];
      const seenTypes = async (tenantAuth: string, types: string[]) => {
        const res = await api('GET', `/v1/events?limit=100&type=${types.join(',')}`, { auth: tenantAuth });
        return new Set((res.body.data as { type: string }[] | undefined)?.map((e) => e.type) ?? []);
      };
      const missing = async () => {
        const seen = await seenTypes(auth, wanted);
        return wanted.filter((t) => !seen.has(t));
      };
      await eventually(
        async () => ((await missing()).length === 0 ? true : undefined),
        20_000,
        'every walk-through event type in /v1/events',
      ).catch(async (err) => {
        throw new Error(`${String(err)}; missing: ${(await missing()).join(', ')}`);
      });
      await eventually(
        async () => {
          const res = await api('GET', '/v1/events?limit=100&type=API_CALL', { auth });
          const routes = new Set((res.body.data as { data: { route: string } }[]).map((e) => e.data.route));
          return routes.has('/v1/tenants/:tenantId/api-keys/:keyId/rotate') && routes.has('/v1/verify')
            ? true
            : undefined;
        },
        20_000,
        'API_CALL events in /v1/events',
      );

      // The approved request's tenant sees its approval and its own creation.
      const globexAuth = `${approved.body.tenant.id}:${approved.body.api_key.api_key}`;
      await eventually(
        async () => {
          const seen = await seenTypes(globexAuth, ['ONBOARDING_APPROVED', 'TENANT_CREATED']);
          return seen.size === 2 ? true : undefined;
        },
        20_000,
        'ONBOARDING_APPROVED in the new tenant’s /v1/events',
      );
      await eventually(
        async () => {
          const types = new Set(platformEvents.map((e) => `${e.type} ${e.resource?.id}`));
          return types.has(`ONBOARDING_REQUESTED ${approvedRequest.body.id}`) &&
            types.has(`ONBOARDING_REJECTED ${rejectedRequest.body.id}`) &&
            types.has(`STATUS_LIST_PUBLISHED ${listPath.split('/').pop()}`)
            ? true
            : undefined;
        },
        20_000,
        'ONBOARDING_REQUESTED, ONBOARDING_REJECTED and STATUS_LIST_PUBLISHED on the broker',
      );
    } finally {
      await connection.close();
    }
  }, 90_000);
});
