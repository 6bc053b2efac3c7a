import express from 'express';
import { INTERNAL_SERVICES, systemClock } from '@mandate/shared/core';
import { type Logger } from '@mandate/shared/observability';
import { type AuditEvent, type EventPublisher } from '@mandate/shared/events';
import {
  ServiceClient,
  callerOf,
  listen,
  requireInternalToken,
  type RunningServer,
} from '@mandate/shared/http';
import { testTokens } from '@mandate/shared/testing';
import {
  createApp as createIdentity,
  type IdentityApp,
  MemoryIdentityStore,
} from '@mandate/identity/testing';
import type { Upstreams } from '@mandate/gateway/testing';

/** Drops every event: the tests that use it are about answers, not the audit trail. */
export class NullPublisher implements EventPublisher {
  readonly kind = 'in-process' as const;
  async publish(_events: AuditEvent[]) {}
  async close() {}
}

export interface InProcessUpstreams {
  /** The real identity service on a memory store. */
  identity: IdentityApp;
  identityServer: RunningServer;
  upstreams: Upstreams;
  /** Closes the clients, identity and the echo; stop the gateway first. */
  close(): Promise<void>;
}

/**
 * The gateway's upstreams for tests of how it authenticates: the real identity service in-process,
 * and for mandates, verify and audit one echo of the caller the gateway established.
 */
export async function startInProcessUpstreams(logger: Logger): Promise<InProcessUpstreams> {
  const echoApp = express();
  echoApp.use(requireInternalToken(testTokens, INTERNAL_SERVICES));
  echoApp.all('/{*rest}', (req, res) => {
    const caller = callerOf(req);
    res.json({ tenant: caller.tenantId, actor: caller.actor, permissions: caller.permissions });
  });
  const echo = await listen(echoApp, 0);
  const identity = createIdentity({
    store: new MemoryIdentityStore(),
    publisher: new NullPublisher(),
    tokens: testTokens,
    logger,
    clock: systemClock,
  });
  const identityServer = await identity.start(0);
  const clients = [echo.url, echo.url, identityServer.url, echo.url].map((u) => new ServiceClient([u]));
  const [mandates, verify, identityClient, audit] = clients as [
    ServiceClient,
    ServiceClient,
    ServiceClient,
    ServiceClient,
  ];
  return {
    identity,
    identityServer,
    upstreams: { mandates, verify, identity: identityClient, audit },
    async close() {
      await Promise.all(clients.map((c) => c.close()));
      await identity.stop();
      await echo.close();
    },
  };
}
