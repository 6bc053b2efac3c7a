import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { ConfigError } from '@mandate/shared/core';
import {
  deploymentProblems,
  serviceConfig,
  type BaseConfig,
  type DeploymentNeeds,
  type ServiceMain,
} from '@mandate/shared/service';
import { service as audit } from '@mandate/audit/service';
import { service as gateway } from '@mandate/gateway/service';
import { service as identity } from '@mandate/identity/service';
import { service as mandates } from '@mandate/mandates/service';
import { service as verify } from '@mandate/verify/service';
import { podContainers, renderKustomization, type K8sObject } from './render';

/**
 * The production configuration is complete (docs/DECISIONS.md, "Deployment configuration is
 * checked at start"): each service's configuration is loaded, through the same function its
 * main.ts starts with, from exactly the environment the deployment files give it — the image's
 * ENV, the kustomize overlays' ConfigMap and env, docker-compose.yml's environment — with every
 * secret a placeholder. A variable the service needs that the files do not set, or a public URL
 * naming loopback while the service listens beyond it, fails here before it fails a deployment.
 */
const ROOT = path.join(__dirname, '..', '..');
type Main = Pick<ServiceMain<BaseConfig, unknown>, 'configSchema' | 'separateProcessConfigSchema'> & {
  deployment: DeploymentNeeds;
};
const SERVICES: Record<string, Main> = { gateway, mandates, verify, identity, audit } as never;
const NAMES = Object.keys(SERVICES);

/** A stand-in for each secret, as an operator would fill secrets.env in (never a real value). */
const placeholder = (name: string): string => {
  const examples: Record<string, string> = {
    AMQP_URL: 'amqp://mandate:placeholder@rabbitmq:5672',
    MONGO_URL: 'mongodb://mandate:placeholder@mongodb-0.mongodb:27017/?replicaSet=rs0&authSource=admin',
    MANDATES_MONGO_URL:
      'mongodb://mandates:placeholder@mongodb-0.mongodb:27017/?replicaSet=rs0&authSource=admin',
    IDENTITY_MONGO_URL:
      'mongodb://identity:placeholder@mongodb-0.mongodb:27017/?replicaSet=rs0&authSource=admin',
    AUDIT_MONGO_URL: 'mongodb://audit:placeholder@mongodb-0.mongodb:27017/?replicaSet=rs0&authSource=admin',
    REDIS_URL: 'redis://:placeholder@redis:6379',
    LOCAL_SIGNING_KEY: '{"kty":"EC","crv":"P-256","placeholder":true}',
  };
  return examples[name] ?? randomBytes(32).toString('hex');
};

/** The image's `ENV` lines (Dockerfile, stage `base`, which every service's target builds on). */
function imageEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').split('\n')) {
    const m = /^ENV\s+(.+)$/.exec(line.trim());
    if (!m) continue;
    for (const pair of m[1]!.split(/\s+/)) {
      const eq = pair.indexOf('=');
      env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { key: string }; configMapKeyRef?: { name: string; key: string } };
}

/** The environment of one workload's container as Kubernetes would set it: image, envFrom, then env. */
function kubernetesEnv(objects: K8sObject[], name: string): Record<string, string> {
  const workload = objects.find(
    (o) => (o.kind === 'Deployment' || o.kind === 'StatefulSet') && o.metadata.name === name,
  );
  if (!workload) throw new Error(`no workload named ${name}`);
  const container = podContainers(workload)[0] as unknown as {
    envFrom?: { configMapRef?: { name: string } }[];
    env?: EnvVar[];
  };
  const configMap = (ref: string) => {
    const found = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === ref);
    if (!found) throw new Error(`${name}: no ConfigMap ${ref}`);
    return (found.data ?? {}) as Record<string, string>;
  };
  const env: Record<string, string> = { ...imageEnv() };
  for (const from of container.envFrom ?? [])
    if (from.configMapRef) Object.assign(env, configMap(from.configMapRef.name));
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) env[e.name] = placeholder(e.valueFrom.secretKeyRef.key);
    else if (e.valueFrom?.configMapKeyRef)
      env[e.name] = configMap(e.valueFrom.configMapKeyRef.name)[e.valueFrom.configMapKeyRef.key]!;
  }
  return env;
}

/**
 * docker compose's interpolation of one value: `$$` is a `$`, `${NAME:?message}` fails without
 * NAME, `${NAME:-default}` and `${NAME}` read the shell's environment.
 */
function interpolate(value: string, shell: Record<string, string>): string {
  return value.replace(/\$\$|\$\{([A-Z0-9_]+)(?:(:\?|:-)([^}]*))?\}/g, (whole, name, op, arg) => {
    if (whole === '$$') return '$';
    const set = shell[name as string];
    if (set) return set;
    if (op === ':?') throw new Error(`required variable ${name} is missing a value: ${arg}`);
    return op === ':-' ? (arg as string) : '';
  });
}

/** One compose service's environment as its container gets it, `<NAME>_FILE` secrets as placeholders. */
function composeEnv(name: string, shell: Record<string, string>): Record<string, string> {
  const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, { environment?: Record<string, string> }>;
  };
  const env: Record<string, string> = { ...imageEnv() };
  for (const [key, raw] of Object.entries(compose.services[name]?.environment ?? {})) {
    const value = interpolate(String(raw), shell);
    // The secrets service writes these files on the first start; the value is a placeholder here.
    if (key.endsWith('_FILE') && key !== 'LOCAL_SIGNING_KEY_FILE')
      env[key.slice(0, -'_FILE'.length)] = placeholder(key.slice(0, -'_FILE'.length));
    else env[key] = value;
  }
  return env;
}

/** The problems of a service started with `env`, as its main.ts would print them; [] when it starts. */
function problemsOf(name: string, env: Record<string, string>): string[] {
  try {
    serviceConfig(SERVICES[name]!, env, true);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

/** What docs/DEPLOYMENT.md has the operator export before `docker compose up`. */
const COMPOSE_SHELL = { PUBLIC_BASE_URL: 'https://mandates.example.net' };

describe('the production configuration, as the deployment files give it', () => {
  const renders: [string, K8sObject[]][] = [
    ['the kustomize base', renderKustomization(path.join(ROOT, 'deploy', 'k8s', 'base'))],
    [
      'the production overlay',
      renderKustomization(path.join(ROOT, 'deploy', 'k8s', 'overlays', 'production')),
    ],
  ];

  describe.each(renders)('%s', (_label, objects) => {
    it.each(NAMES)('when %s loads its configuration from it, then nothing needed is missing', (name) => {
      const env = kubernetesEnv(objects, name);
      expect(env.HOST).toBe('0.0.0.0');
      expect({ name, problems: problemsOf(name, env) }).toEqual({ name, problems: [] });
    });
  });

  it.each(NAMES)(
    'when %s loads its configuration from docker-compose.yml (with PUBLIC_BASE_URL exported, as DEPLOYMENT.md says), then nothing needed is missing',
    (name) => {
      const env = composeEnv(name, COMPOSE_SHELL);
      expect(env.HOST).toBe('0.0.0.0');
      expect({ name, problems: problemsOf(name, env) }).toEqual({ name, problems: [] });
    },
  );

  it('when docker compose is run without PUBLIC_BASE_URL, then it refuses, naming the variable', () => {
    expect(() => composeEnv('mandates', {})).toThrow(/PUBLIC_BASE_URL/);
  });

  it('when each service names what it needs, then the deployment files set every one of them', () => {
    // The needs themselves: a service that needs nothing would make the checks above vacuous.
    for (const name of NAMES) {
      expect(Object.keys(SERVICES[name]!.deployment.required)).toContain('INTERNAL_TOKEN_SECRET');
      expect(Object.keys(SERVICES[name]!.deployment.required)).toContain('AMQP_URL');
    }
    expect(Object.keys(SERVICES.mandates!.deployment.required)).toContain('PUBLIC_BASE_URL');
    expect(Object.keys(SERVICES.mandates!.deployment.publicUrls)).toContain('PUBLIC_BASE_URL');
  });
});

describe('the checks themselves (shared deployment.ts)', () => {
  const env = kubernetesEnv(renderKustomization(path.join(ROOT, 'deploy', 'k8s', 'base')), 'mandates');

  it('when PUBLIC_BASE_URL is missing from a deployment, then mandates refuses with one line naming it', () => {
    const { PUBLIC_BASE_URL: _dropped, ...without } = env;
    const problems = problemsOf('mandates', without);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^PUBLIC_BASE_URL: is required when HOST=0\.0\.0\.0/);
  });

  it.each(['http://127.0.0.1:8080', 'http://localhost:8080', 'http://[::1]:8080'])(
    'when PUBLIC_BASE_URL is %s while mandates listens on 0.0.0.0, then one line names it as loopback',
    (url) => {
      const problems = problemsOf('mandates', { ...env, PUBLIC_BASE_URL: url });
      expect(problems).toEqual([expect.stringMatching(/^PUBLIC_BASE_URL: .* is a loopback address/)]);
    },
  );

  it('when the same loopback URL is used on a loopback listen address (npm run start:services), then it starts', () => {
    expect(
      problemsOf('mandates', { ...env, HOST: '127.0.0.1', PUBLIC_BASE_URL: 'http://127.0.0.1:8080' }),
    ).toEqual([]);
  });

  it('when a JSON variable holds a loopback issuer, then it is named too', () => {
    const problems = deploymentProblems(
      {
        JWT_ISSUERS: JSON.stringify([
          { issuer: 'https://idp.example.net', jwks_uri: 'http://localhost:9/jwks' },
        ]),
      },
      '0.0.0.0',
      { required: {}, publicUrls: { JWT_ISSUERS: 'issuers' } },
    );
    expect(problems).toEqual([
      expect.stringMatching(/^JWT_ISSUERS: http:\/\/localhost:9\/jwks is a loopback/),
    ]);
  });

  it('when a required variable comes from <NAME>_FILE, then it counts as set', () => {
    expect(
      deploymentProblems({ MONGO_URL_FILE: '/run/secrets/mongo-url' }, '0.0.0.0', {
        required: { MONGO_URL: 'kept' },
        publicUrls: {},
      }),
    ).toEqual([]);
  });
});
