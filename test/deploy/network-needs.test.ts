import path from 'node:path';
import type { DeploymentNeeds } from '@mandate/shared/service';
import { service as audit } from '@mandate/audit/service';
import { service as gateway } from '@mandate/gateway/service';
import { service as identity } from '@mandate/identity/service';
import { service as mandates } from '@mandate/mandates/service';
import { service as verify } from '@mandate/verify/service';
import { connectionAllowed, type Peer } from './network-policy';
import { renderKustomization, type K8sObject } from './render';

/**
 * The network policies match the traffic (docs/KUBERNETES.md, "Network policies"): each service's
 * outbound connections are derived from its configuration — the service URLs it is given (to that
 * Service's pods and port), the infrastructure URLs (RabbitMQ, MongoDB, Redis) and the variables
 * its deploymentNeeds declare `outbound` (HTTPS out of the cluster: webhooks, issuers' JWKS, KMS) —
 * and each must be allowed by the rendered policies; HTTPS out is allowed to no service that
 * declares none. A new variable that names something to call (`*_URL`, `*_ENDPOINT`, `*_URI`,
 * `*_ISSUERS`) fails here until it is classified, so the next feature that calls out cannot be
 * forgotten in the policies.
 */
const ROOT = path.join(__dirname, '..', '..');
type Main = { configSchema: unknown; deployment: DeploymentNeeds };
const SERVICES: Record<string, Main> = { gateway, mandates, verify, identity, audit } as never;
const NAMES = Object.keys(SERVICES);

const INFRASTRUCTURE: Record<string, { kind: string; port: number }> = {
  AMQP_URL: { kind: 'rabbitmq', port: 5672 },
  MONGO_URL: { kind: 'mongodb', port: 27017 },
  REDIS_URL: { kind: 'redis', port: 6379 },
};
/** Variables that name something to reach but open no connection from the service in a cluster, each with why. */
const NO_EGRESS: Record<string, string> = {
  OTEL_EXPORTER_OTLP_ENDPOINT:
    'tracing is off in the manifests; docs/KUBERNETES.md says to add a rule to the collector with it',
  WALLET_TRUST_TEST_ISSUER: 'a switch: the TEST issuer is generated in the process (never in production)',
  DASHBOARD_OIDC_ISSUER: "opened by the browser; the gateway fetches the issuer's keys through JWT_ISSUERS",
};
const CALLS_SOMETHING = /(_URL|_ENDPOINT|_URI|_ISSUERS?)$/;

/** The variables of a service's config schema (a zod object, or one wrapped by a refinement). */
function variablesOf(schema: unknown): string[] {
  const shape = (schema as { shape?: Record<string, unknown> }).shape;
  if (!shape) throw new Error('config schema without a shape');
  return Object.keys(shape);
}

/** The env a workload's container gets from the ConfigMap and its literal env (the service URLs live there). */
function literalEnv(objects: K8sObject[], name: string): Record<string, string> {
  const [config] = objects.filter(
    (o) => o.kind === 'ConfigMap' && o.metadata.name === 'mandate-service-config',
  );
  const workload = objects.find(
    (o) => (o.kind === 'Deployment' || o.kind === 'StatefulSet') && o.metadata.name === name,
  )!;
  const container = (
    workload.spec as { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } }
  ).template.spec.containers[0]!;
  const env: Record<string, string> = { ...((config?.data ?? {}) as Record<string, string>) };
  for (const e of container.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  return env;
}

interface Need {
  variable: string;
  to: Peer;
  port: number;
  what: string;
}

describe.each([
  ['the kustomize base', path.join(ROOT, 'deploy', 'k8s', 'base')],
  ['the production overlay', path.join(ROOT, 'deploy', 'k8s', 'overlays', 'production')],
])('%s: the network policies against what the services call', (_label, dir) => {
  const objects = renderKustomization(dir);
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
  const namespace = objects.find((o) => o.metadata.namespace)?.metadata.namespace ?? 'default';
  const labelsOf = (name: string) =>
    (
      objects.find((o) => (o.kind === 'Deployment' || o.kind === 'StatefulSet') && o.metadata.name === name)!
        .spec as { template: { metadata: { labels: Record<string, string> } } }
    ).template.metadata.labels;
  const pod = (name: string): Peer => ({ pod: { namespace, labels: labelsOf(name) } });
  const internet: Peer = { ip: '198.51.100.20' };
  const dns: Peer = { pod: { namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } } };

  /** What a service opens, derived from its configuration as the manifests give it. */
  function needsOf(name: string): { needs: Need[]; unclassified: string[] } {
    const { configSchema, deployment } = SERVICES[name]!;
    const env = literalEnv(objects, name);
    const needs: Need[] = [];
    const unclassified: string[] = [];
    for (const variable of variablesOf(configSchema)) {
      const infra = INFRASTRUCTURE[variable];
      if (infra) {
        needs.push({
          variable,
          to: { pod: { namespace, labels: { 'mandate-service/infrastructure': infra.kind } } },
          port: infra.port,
          what: infra.kind,
        });
      } else if (deployment.outbound?.[variable]) {
        needs.push({ variable, to: internet, port: 443, what: deployment.outbound[variable]! });
      } else if (/^(MANDATES|VERIFY|IDENTITY|AUDIT)_URL$/.test(variable)) {
        // Only what the manifests give it: a service URL it is not given is one it does not call there.
        for (const url of (env[variable] ?? '').split(',').filter(Boolean)) {
          const { hostname, port } = new URL(url);
          needs.push({ variable, to: pod(hostname), port: Number(port), what: hostname });
        }
      } else if (
        CALLS_SOMETHING.test(variable) &&
        !(variable in NO_EGRESS) &&
        !(variable in deployment.publicUrls)
      ) {
        unclassified.push(variable);
      }
    }
    return { needs, unclassified };
  }

  it.each(NAMES)(
    'when the configuration of %s is read, then every variable that names something to call is classified',
    (name) => {
      expect({ name, unclassified: needsOf(name).unclassified }).toEqual({ name, unclassified: [] });
    },
  );

  it.each(NAMES)('when %s opens what its configuration calls, then the policies allow each', (name) => {
    const { needs } = needsOf(name);
    expect(needs.length).toBeGreaterThan(0);
    const refused = needs
      .filter((n) => !connectionAllowed(policies, pod(name), n.to, n.port))
      .map((n) => `${n.variable} → ${n.what}:${n.port}`);
    expect({ name, refused }).toEqual({ name, refused: [] });
    // Every name is looked up first.
    expect([name, connectionAllowed(policies, pod(name), dns, 53, 'UDP')]).toEqual([name, true]);
  });

  it.each(NAMES)(
    'when %s opens HTTPS out of the cluster, then it is allowed exactly when its configuration calls out',
    (name) => {
      const callsOut = Object.keys(SERVICES[name]!.deployment.outbound ?? {}).length > 0;
      expect([name, connectionAllowed(policies, pod(name), internet, 443)]).toEqual([name, callsOut]);
    },
  );

  it('when audit delivers webhooks, then HTTPS out and DNS are allowed to it', () => {
    expect(SERVICES.audit!.deployment.outbound).toHaveProperty('WEBHOOKS_TIMEOUT_MS');
    expect(connectionAllowed(policies, pod('audit'), internet, 443)).toBe(true);
    expect(connectionAllowed(policies, pod('audit'), dns, 53, 'UDP')).toBe(true);
    expect(connectionAllowed(policies, pod('audit'), dns, 53, 'TCP')).toBe(true);
  });
});
