import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Namespace, Service } from 'kubernetes-models/v1';
import { k8sMongoProblems, mongoSecretKey } from './mongo-credentials';
import { connectionAllowed, selects, type Peer } from './network-policy';
import { mergePatch, podContainers, renderKustomization, type K8sObject } from './render';

/**
 * The manifests under deploy/k8s, rendered (base and production overlay) and checked against the
 * Kubernetes API schemas (kubernetes-models: the OpenAPI schemas of the API, compiled to JSON
 * schema validators), then against the rules of docs/KUBERNETES.md.
 */
const ROOT = path.join(__dirname, '..', '..');
const K8S = path.join(ROOT, 'deploy', 'k8s');

/** What each service is: its port, what it calls, which secrets it reads, whether it spools events. */
const SERVICES = {
  gateway: {
    port: 8080,
    calls: ['mandates', 'verify', 'identity', 'audit'],
    secrets: ['OPERATOR_TOKEN', 'INTERNAL_TOKEN_SECRET', 'AMQP_URL', 'REDIS_URL'],
    spool: true,
  },
  mandates: {
    port: 8081,
    calls: ['identity'],
    secrets: ['INTERNAL_TOKEN_SECRET', 'AMQP_URL', 'REDIS_URL', 'MONGO_URL', 'LOCAL_SIGNING_KEY'],
    spool: false,
  },
  verify: {
    port: 8082,
    calls: ['mandates'],
    secrets: ['INTERNAL_TOKEN_SECRET', 'AMQP_URL', 'REDIS_URL'],
    spool: true,
  },
  identity: {
    port: 8083,
    calls: [],
    secrets: ['INTERNAL_TOKEN_SECRET', 'AMQP_URL', 'MONGO_URL'],
    spool: false,
  },
  audit: {
    port: 8084,
    calls: ['mandates'],
    secrets: ['INTERNAL_TOKEN_SECRET', 'AMQP_URL', 'MONGO_URL'],
    spool: false,
  },
} as const;
type ServiceName = keyof typeof SERVICES;
const NAMES = Object.keys(SERVICES) as ServiceName[];
/** The variables a workload reads from the Secret. */
const SECRET_ENV = [
  'OPERATOR_TOKEN',
  'INTERNAL_TOKEN_SECRET',
  'AMQP_URL',
  'REDIS_URL',
  'MONGO_URL',
  'LOCAL_SIGNING_KEY',
];
/**
 * The Secret's key a service's variable comes from: the variable's own name, except MONGO_URL, which
 * each service reads from a key of its own (its own MongoDB user, docs/OPERATIONS.md, "MongoDB:
 * databases and users").
 */
const secretKeyOf = (service: ServiceName, variable: string) =>
  variable === 'MONGO_URL' ? mongoSecretKey(service) : variable;
const SECRET_KEYS = [
  ...new Set(NAMES.flatMap((name) => SERVICES[name].secrets.map((v) => secretKeyOf(name, v)))),
];
const URL_KEYS = {
  MANDATES_URL: 'mandates',
  VERIFY_URL: 'verify',
  IDENTITY_URL: 'identity',
  AUDIT_URL: 'audit',
};

/** The schema of each kind the manifests may hold; any other kind fails the test. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'networking.k8s.io/v1/Ingress': Ingress,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/ConfigMap': ConfigMap,
  'v1/Namespace': Namespace,
  'v1/Service': Service,
};

interface Container {
  name: string;
  image: string;
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: Record<string, { name: string; key: string }> }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  livenessProbe?: { httpGet?: { path: string; port: number | string } };
  readinessProbe?: { httpGet?: { path: string; port: number | string } };
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  securityContext?: Record<string, unknown>;
  containers: Container[];
  volumes?: { name: string; emptyDir?: unknown; persistentVolumeClaim?: unknown }[];
}
interface WorkloadSpec {
  replicas?: number;
  selector: { matchLabels: Record<string, string> };
  template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  volumeClaimTemplates?: { metadata: { name: string } }[];
}

const spec = <T>(o: K8sObject) => o.spec as T;
const byKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
const workloads = (objects: K8sObject[]) =>
  objects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
const workload = (objects: K8sObject[], name: string) => {
  const found = workloads(objects).find((o) => o.metadata.name === name);
  if (!found) throw new Error(`no Deployment or StatefulSet named ${name}`);
  return found;
};
const containerOf = (o: K8sObject) => spec<WorkloadSpec>(o).template.spec.containers[0]!;

const RENDERS: [string, () => K8sObject[]][] = [
  ['the base', () => renderKustomization(path.join(K8S, 'base'))],
  ['the production overlay', () => renderKustomization(path.join(K8S, 'overlays', 'production'))],
  [
    'the production overlay with an Ingress',
    () => renderKustomization(path.join(K8S, 'overlays', 'production-ingress')),
  ],
];

describe.each(RENDERS)('%s, rendered', (_label, render) => {
  const objects = render();
  const namespace = objects.find((o) => o.metadata.namespace)?.metadata.namespace ?? 'default';

  it('when every object is validated against the Kubernetes API schema of its kind, then none fails', () => {
    const failures: string[] = [];
    for (const o of objects) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      if (!Model) {
        failures.push(`${o.kind}/${o.metadata.name}: no schema for ${o.apiVersion} ${o.kind}`);
        continue;
      }
      try {
        new Model(o as never).validate();
      } catch (err) {
        failures.push(`${o.kind}/${o.metadata.name}: ${(err as Error).message}`);
      }
    }
    expect(failures).toEqual([]);
    expect(objects.length).toBeGreaterThan(NAMES.length * 4);
  });

  it('when the objects are listed, then each kind and name is unique and no Secret carries a value', () => {
    const ids = objects.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(ids).toEqual([...new Set(ids)]);
    expect(byKind(objects, 'Secret')).toEqual([]);
  });

  it.each(NAMES)(
    'when the %s workload is read, then it probes /livez (liveness) and /readyz (readiness) on its port and sets CPU and memory requests and limits',
    (name) => {
      const o = workload(objects, name);
      const c = containerOf(o);
      const port = c.ports?.find((p) => p.containerPort === SERVICES[name].port);
      expect(port).toBeDefined();
      const probePort = (p: number | string | undefined) => (p === port!.name ? port!.containerPort : p);
      expect({
        path: c.livenessProbe?.httpGet?.path,
        port: probePort(c.livenessProbe?.httpGet?.port),
      }).toEqual({
        path: '/livez',
        port: SERVICES[name].port,
      });
      expect({
        path: c.readinessProbe?.httpGet?.path,
        port: probePort(c.readinessProbe?.httpGet?.port),
      }).toEqual({ path: '/readyz', port: SERVICES[name].port });
      expect(Object.keys(c.resources?.requests ?? {}).sort()).toEqual(['cpu', 'memory']);
      expect(Object.keys(c.resources?.limits ?? {}).sort()).toEqual(['cpu', 'memory']);
      expect(c.env?.find((e) => e.name === 'PORT')?.value).toBe(String(SERVICES[name].port));
    },
  );

  it.each(NAMES)(
    'when the %s workload reads a secret, then it comes from a secretKeyRef of the Secret and never from a literal value',
    (name) => {
      const c = containerOf(workload(objects, name));
      const secretEnv = (c.env ?? []).filter((e) => SECRET_ENV.includes(e.name));
      expect(secretEnv.map((e) => e.name).sort()).toEqual([...SERVICES[name].secrets].sort());
      for (const e of secretEnv) {
        expect(e.value).toBeUndefined();
        expect(e.valueFrom?.secretKeyRef).toEqual(
          expect.objectContaining({ name: 'mandate-service-secrets', key: secretKeyOf(name, e.name) }),
        );
      }
      // Nothing else smuggles a secret in: no secretRef wholesale, no secret-looking literal.
      expect((c.envFrom ?? []).filter((f) => f.secretRef)).toEqual([]);
      const literals = (c.env ?? []).filter(
        (e) => e.value !== undefined && /TOKEN|SECRET|PASSWORD|_KEY$/.test(e.name),
      );
      expect(literals).toEqual([]);
    },
  );

  it("when each service's MONGO_URL is read, then mandates, identity and audit each read their own Secret key, and gateway and verify none", () => {
    expect(k8sMongoProblems(objects)).toEqual([]);
  });

  it('when the service URLs are read, then they come from the ConfigMap every service loads, and each names its Service and port', () => {
    const [config] = byKind(objects, 'ConfigMap').filter((o) => o.metadata.name === 'mandate-service-config');
    expect(config).toBeDefined();
    const data = config!.data as Record<string, string>;
    for (const [key, target] of Object.entries(URL_KEYS))
      expect(data[key]).toBe(`http://${target}:${SERVICES[target as ServiceName].port}`);
    for (const name of NAMES) {
      const c = containerOf(workload(objects, name));
      expect(c.envFrom).toContainEqual({ configMapRef: { name: 'mandate-service-config' } });
      expect((c.env ?? []).filter((e) => e.name in URL_KEYS)).toEqual([]);
    }
    for (const name of NAMES) {
      const [svc] = byKind(objects, 'Service').filter((o) => o.metadata.name === name);
      const s = spec<{ selector: Record<string, string>; ports: { port: number }[] }>(svc!);
      expect(s.ports.map((p) => p.port)).toEqual([SERVICES[name].port]);
      expect(
        selects(
          { matchLabels: s.selector },
          spec<WorkloadSpec>(workload(objects, name)).template.metadata.labels,
        ),
      ).toBe(true);
    }
  });

  it.each(NAMES)(
    'when the %s pod is read, then it runs as non-root with a read-only root filesystem, and every path it writes is a volume',
    (name) => {
      const pod = spec<WorkloadSpec>(workload(objects, name)).template.spec;
      const c = pod.containers[0]!;
      expect(pod.securityContext).toEqual(expect.objectContaining({ runAsNonRoot: true }));
      expect(c.securityContext).toEqual(
        expect.objectContaining({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        }),
      );
      const mounts = new Map((c.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
      // The default temp files (Node's, the spool's parent) live under /tmp on a read-only root.
      expect(mounts.has('/tmp')).toBe(true);
      const spoolDir = c.env?.find((e) => e.name === 'EVENT_SPOOL_DIR')?.value;
      // Only a service that spools names a spool directory; the rest has nothing more to check.
      expect({ name, spoolDir: spoolDir !== undefined }).toEqual({ name, spoolDir: SERVICES[name].spool });
      if (!SERVICES[name].spool) return;
      const mount = [...mounts.keys()].find((m) => spoolDir?.startsWith(`${m}/`));
      expect(mount).toBeDefined();
      // The spool must outlive the pod ("nothing lost"): a claim per pod, not an emptyDir.
      const claims = spec<WorkloadSpec>(workload(objects, name)).volumeClaimTemplates ?? [];
      expect(claims.map((t) => t.metadata.name)).toContain(mounts.get(mount!));
    },
  );

  it('when autoscaling is read, then verify and gateway each have an autoscaling/v2 HorizontalPodAutoscaler on their workload, and nothing else scales', () => {
    const hpas = byKind(objects, 'HorizontalPodAutoscaler');
    expect(hpas.map((h) => h.metadata.name).sort()).toEqual(['gateway', 'verify']);
    for (const h of hpas) {
      const s = spec<{
        scaleTargetRef: { kind: string; name: string };
        minReplicas: number;
        maxReplicas: number;
      }>(h);
      const target = workload(objects, h.metadata.name);
      expect(h.apiVersion).toBe('autoscaling/v2');
      expect(s.scaleTargetRef).toEqual(expect.objectContaining({ kind: target.kind, name: h.metadata.name }));
      expect(s.minReplicas).toBeGreaterThanOrEqual(2);
      expect(s.maxReplicas).toBeGreaterThan(s.minReplicas);
      // The HPA owns the count: a replicas field would be reset on every apply.
      expect(spec<WorkloadSpec>(target).replicas).toBeUndefined();
    }
  });

  it.each(NAMES)(
    'when disruptions are read, then the %s pods have a PodDisruptionBudget selecting them',
    (name) => {
      const pdbs = byKind(objects, 'PodDisruptionBudget').filter((p) =>
        selects(
          spec<{ selector: object }>(p).selector,
          spec<WorkloadSpec>(workload(objects, name)).template.metadata.labels,
        ),
      );
      expect(pdbs.map((p) => p.metadata.name)).toEqual([name]);
    },
  );

  describe('the NetworkPolicies', () => {
    const policies = byKind(objects, 'NetworkPolicy');
    const pod = (name: string): Peer => ({
      pod: { namespace, labels: spec<WorkloadSpec>(workload(objects, name)).template.metadata.labels },
    });
    const infra = (kind: string): Peer => ({
      pod: { namespace, labels: { 'mandate-service/infrastructure': kind } },
    });
    const stranger: Peer = { pod: { namespace, labels: { app: 'something-else' } } };
    const elsewhere: Peer = { pod: { namespace: 'other', labels: { app: 'something-else' } } };
    const internet: Peer = { ip: '203.0.113.7' };
    const dns: Peer = { pod: { namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } } };
    const INFRA = { rabbitmq: 5672, mongodb: 27017, redis: 6379 };

    it('when anyone outside calls a service, then only the gateway answers', () => {
      const reached = NAMES.filter((n) =>
        [internet, stranger, elsewhere].every((from) =>
          connectionAllowed(policies, from, pod(n), SERVICES[n].port),
        ),
      );
      expect(reached).toEqual(['gateway']);
    });

    it('when a service calls another, then exactly the calls the services make are allowed', () => {
      const allowed: string[] = [];
      for (const from of NAMES)
        for (const to of NAMES)
          if (from !== to && connectionAllowed(policies, pod(from), pod(to), SERVICES[to].port))
            allowed.push(`${from}->${to}`);
      const expected = NAMES.flatMap((from) => SERVICES[from].calls.map((to) => `${from}->${to}`));
      expect(allowed.sort()).toEqual(expected.sort());
    });

    it('when the infrastructure is reached, then every service gets through and nothing else does', () => {
      for (const [kind, port] of Object.entries(INFRA)) {
        for (const n of NAMES)
          expect([n, kind, connectionAllowed(policies, pod(n), infra(kind), port)]).toEqual([n, kind, true]);
        for (const from of [stranger, elsewhere, internet])
          expect([from, kind, connectionAllowed(policies, from, infra(kind), port)]).toEqual([
            from,
            kind,
            false,
          ]);
      }
    });

    it('when a service opens anything else, then only DNS, the infrastructure, its callees and (gateway, mandates, identity, audit) outside HTTPS are allowed', () => {
      for (const n of NAMES) {
        expect([n, connectionAllowed(policies, pod(n), dns, 53, 'UDP')]).toEqual([n, true]);
        expect([n, connectionAllowed(policies, pod(n), dns, 53, 'TCP')]).toEqual([n, true]);
        expect([n, connectionAllowed(policies, pod(n), stranger, 5432)]).toEqual([n, false]);
        expect([n, connectionAllowed(policies, pod(n), elsewhere, 8080)]).toEqual([n, false]);
        expect([n, connectionAllowed(policies, pod(n), internet, 80)]).toEqual([n, false]);
        const https = connectionAllowed(policies, pod(n), internet, 443);
        // audit: webhook deliveries (network-needs.test.ts derives each from the configuration).
        expect([n, https]).toEqual([
          n,
          n === 'gateway' || n === 'mandates' || n === 'identity' || n === 'audit',
        ]);
      }
    });
  });
});

describe('the production overlay', () => {
  const objects = renderKustomization(path.join(K8S, 'overlays', 'production'));

  it('when rendered, then everything lives in its namespace and every image is a pinned tag of the registry', () => {
    const namespaced = objects.filter((o) => o.kind !== 'Namespace');
    expect([...new Set(namespaced.map((o) => o.metadata.namespace))]).toEqual(['mandate-service']);
    for (const name of NAMES) {
      const images = podContainers(workload(objects, name)).map((c) => c.image);
      expect(images).toEqual([
        expect.stringMatching(new RegExp(`/mandate-service/${name}:\\d+\\.\\d+\\.\\d+$`)),
      ]);
    }
  });

  it('when the replica counts are read, then every service runs at least three pods (fixed or as the autoscaler minimum)', () => {
    for (const name of NAMES) {
      const hpa = byKind(objects, 'HorizontalPodAutoscaler').find((h) => h.metadata.name === name);
      const count = hpa
        ? spec<{ minReplicas: number }>(hpa).minReplicas
        : spec<WorkloadSpec>(workload(objects, name)).replicas;
      expect([name, count! >= 3]).toEqual([name, true]);
    }
  });
});

describe('the production overlay with an Ingress and TLS (docs/KUBERNETES.md, "Ingress and TLS")', () => {
  const production = renderKustomization(path.join(K8S, 'overlays', 'production'));
  const objects = renderKustomization(path.join(K8S, 'overlays', 'production-ingress'));
  const ingresses = byKind(objects, 'Ingress');
  type IngressSpec = {
    tls?: { hosts?: string[]; secretName?: string }[];
    rules?: {
      host?: string;
      http?: {
        paths: { backend: { service?: { name: string; port: { name?: string; number?: number } } } }[];
      };
    }[];
  };

  it('when rendered, then it is the production overlay plus one Ingress in the same namespace, and the gateway trusts the proxy', () => {
    const data = (o: K8sObject) => (o as { data?: Record<string, string> }).data;
    const withoutConfig = (list: K8sObject[]) =>
      list.filter((o) => o.kind !== 'Ingress' && o.kind !== 'ConfigMap');
    expect(withoutConfig(objects)).toEqual(withoutConfig(production));
    const config = byKind(objects, 'ConfigMap');
    expect(config.map(data)).toEqual(
      byKind(production, 'ConfigMap').map((c) => ({ ...data(c), TRUST_PROXY: 'true' })),
    );
    expect(ingresses.map((i) => [i.metadata.name, i.metadata.namespace])).toEqual([
      ['mandate-service', 'mandate-service'],
    ]);
  });

  it('when its backends are read, then every path goes to the gateway Service, on a port that Service exposes', () => {
    const gatewayService = byKind(objects, 'Service').find((s) => s.metadata.name === 'gateway')!;
    const ports = spec<{ ports: { name?: string; port: number }[] }>(gatewayService).ports;
    const backends = (spec<IngressSpec>(ingresses[0]!).rules ?? []).flatMap((r) =>
      (r.http?.paths ?? []).map((p) => p.backend.service),
    );
    expect(backends.length).toBeGreaterThan(0);
    for (const backend of backends) {
      expect(backend?.name).toBe('gateway');
      const port = ports.find((p) => p.name === backend!.port.name || p.port === backend!.port.number);
      expect(port?.port).toBe(8080);
    }
    expect(spec<{ defaultBackend?: unknown }>(ingresses[0]!).defaultBackend).toBeUndefined();
  });

  it('when TLS is read, then cert-manager issues a certificate for every host, and the host is the one PUBLIC_BASE_URL names', () => {
    const ingress = ingresses[0]!;
    const { tls = [], rules = [] } = spec<IngressSpec>(ingress);
    const annotations = (ingress.metadata as { annotations?: Record<string, string> }).annotations ?? {};
    expect(
      annotations['cert-manager.io/cluster-issuer'] ?? annotations['cert-manager.io/issuer'],
    ).toBeTruthy();
    const hosts = rules.map((r) => r.host);
    expect(tls.flatMap((t) => t.hosts ?? []).sort()).toEqual([...hosts].sort());
    expect(tls.every((t) => t.secretName)).toBe(true);
    const config = byKind(objects, 'ConfigMap').map(
      (c) => (c as { data?: Record<string, string> }).data ?? {},
    );
    const publicUrl = config.map((d) => d.PUBLIC_BASE_URL).find(Boolean)!;
    expect(new URL(publicUrl).protocol).toBe('https:');
    expect(hosts).toEqual([new URL(publicUrl).hostname]);
  });
});

describe('the test renderer', () => {
  it('when a patch holds maps and scalars, then it merges them as kustomize does, null deleting', () => {
    expect(
      mergePatch(
        { spec: { replicas: 2, paused: true, x: { a: 1 } } },
        { spec: { replicas: 3, paused: null, x: { b: 2 } } },
      ),
    ).toEqual({
      spec: { replicas: 3, x: { a: 1, b: 2 } },
    });
  });
});

describe('the MongoDB credentials check itself', () => {
  const base = renderKustomization(path.join(K8S, 'base'));
  /** `base` with `service`'s MONGO_URL read from `key`, or removed when `key` is undefined. */
  const withMongoKey = (service: string, key: string | undefined) =>
    base.map((o) => {
      if (o.kind !== 'Deployment' || o.metadata.name !== service) return o;
      const copy = structuredClone(o);
      const c = containerOf(copy);
      c.env = (c.env ?? []).flatMap((e) =>
        e.name !== 'MONGO_URL'
          ? [e]
          : key
            ? [{ ...e, valueFrom: { secretKeyRef: { ...e.valueFrom!.secretKeyRef!, key } } }]
            : [],
      );
      return copy;
    });

  it("when a service reads another service's MongoDB key, or none, then the check names it", () => {
    expect(k8sMongoProblems(withMongoKey('mandates', 'IDENTITY_MONGO_URL'))).toEqual([
      'mandates: MONGO_URL from IDENTITY_MONGO_URL, expected MANDATES_MONGO_URL',
    ]);
    expect(k8sMongoProblems(withMongoKey('audit', undefined))).toEqual([
      'audit: MONGO_URL from nothing, expected AUDIT_MONGO_URL',
    ]);
  });
});

describe('the secrets example', () => {
  it('when secrets.env.example is read, then it names exactly the keys the manifests reference, and secrets.env is ignored by git', () => {
    const example = readFileSync(path.join(K8S, 'secrets.env.example'), 'utf8');
    const keys = example
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => l.slice(0, l.indexOf('=')));
    expect(keys.sort()).toEqual([...SECRET_KEYS].sort());
    expect(readFileSync(path.join(ROOT, '.gitignore'), 'utf8').split('\n')).toContain('secrets.env');
    expect(existsSync(path.join(K8S, 'secrets.env'))).toBe(false);
  });
});
