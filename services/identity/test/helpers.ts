import {
  auditEventSchema,
  createLogger,
  systemClock,
  type AuditEvent,
  type CallerContext,
  type EventPublisher,
} from '@mandate/shared';
import { callService, callerFor, testTokens } from '@mandate/shared/src/testing';
import { createApp, type Deps } from '../src/app';
import { MemoryIdentityStore } from '../src/store/memory-identity-store';

/** Keeps every published event (validated against the contract) for assertions. */
export class CapturingPublisher implements EventPublisher {
  readonly kind = 'in-process' as const;
  readonly events: AuditEvent[] = [];
  async publish(events: AuditEvent[]): Promise<void> {
    for (const e of events) this.events.push(auditEventSchema.parse(e));
  }
  async close(): Promise<void> {}
  forTenant(tenantId: string): AuditEvent[] {
    return this.events.filter((e) => e.tenant_id === tenantId);
  }
}

export const operator: CallerContext = callerFor(null, { actor: { type: 'operator' }, permissions: [] });
export const system: CallerContext = callerFor(null, { actor: { type: 'system' }, permissions: [] });

export async function startIdentity(overrides: Partial<Deps> = {}) {
  const publisher = new CapturingPublisher();
  const app = createApp({
    store: new MemoryIdentityStore(),
    publisher,
    tokens: testTokens,
    logger: createLogger('identity-test', 'silent'),
    clock: systemClock,
    ...overrides,
  });
  const server = await app.start(0);
  const call = (method: string, path: string, options: Parameters<typeof callService>[3] = {}) =>
    callService(server.url, method, path, options);

  /** A fresh tenant made the way production makes one; returns its id, initial key id and secret. */
  const createTenant = async (body: Record<string, unknown> = {}) => {
    const res = await call('POST', '/v1/platform/tenants', {
      caller: operator,
      body: { name: 'Acme', ...body },
    });
    if (res.status !== 201) throw new Error(`tenant creation failed: ${JSON.stringify(res.body)}`);
    return {
      tenantId: res.body.tenant.id as string,
      keyId: res.body.api_key.key_id as string,
      secret: res.body.api_key.api_key as string,
      body: res.body,
    };
  };

  /** The use cases behind the routes, for what no route triggers (the staging-key sweep). */
  const identity = () => app.identity;
  return { app, server, publisher, call, createTenant, identity, stop: () => app.stop() };
}
