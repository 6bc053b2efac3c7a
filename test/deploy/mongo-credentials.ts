import { podContainers, type K8sObject } from './render';

/**
 * Each service that keeps data in MongoDB connects as a user of its own, with readWrite on its own
 * database only (docs/OPERATIONS.md, "MongoDB: databases and users"), so each must read the
 * credentials meant for it: a service given another's (or the gateway given any) would work in a
 * test with one shared user and fail, or over-reach, in production.
 */
export const MONGO_SERVICES = ['mandates', 'identity', 'audit'] as const;
const APPS = ['gateway', 'mandates', 'verify', 'identity', 'audit'];
const usesMongo = (name: string) => (MONGO_SERVICES as readonly string[]).includes(name);

/** The Secret key a service's MONGO_URL must come from in the Kubernetes manifests. */
export const mongoSecretKey = (service: string) => `${service.toUpperCase()}_MONGO_URL`;

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}

/** One line per workload whose MONGO_URL is not its own Secret key (or is set where none belongs). */
export function k8sMongoProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  for (const name of APPS) {
    const workload = objects.find(
      (o) => (o.kind === 'Deployment' || o.kind === 'StatefulSet') && o.metadata.name === name,
    );
    if (!workload) {
      problems.push(`${name}: no workload`);
      continue;
    }
    const env = (podContainers(workload)[0]?.env ?? []) as EnvVar[];
    const mongo = env.filter((e) => e.name === 'MONGO_URL' || e.name === 'MONGO_URL_FILE');
    const keys = mongo.map((e) => e.valueFrom?.secretKeyRef?.key ?? `a literal ${e.name}`);
    const expected = usesMongo(name) ? [mongoSecretKey(name)] : [];
    if (JSON.stringify(keys) !== JSON.stringify(expected))
      problems.push(
        `${name}: MONGO_URL from ${keys.length ? keys.join(', ') : 'nothing'}, expected ${expected[0] ?? 'nothing'}`,
      );
  }
  return problems;
}

/** A compose service as far as these checks read it. */
export interface ComposeService {
  environment?: Record<string, string>;
  volumes?: string[];
}

/** The volume a compose service mounts at `dir`, if any. */
const volumeAt = (service: ComposeService, dir: string) =>
  service.volumes?.map((v) => v.split(':')).find(([, at]) => at === dir)?.[0];

/**
 * One line per compose service whose MONGO_URL_FILE is not on its own volume `secrets-mongo-<name>`
 * (or is set where none belongs), and per such volume mounted by another service than its own and
 * the `secrets` service that writes it.
 */
export function composeMongoProblems(services: Record<string, ComposeService>): string[] {
  const problems: string[] = [];
  for (const name of APPS) {
    const s = services[name] ?? {};
    if (s.environment?.MONGO_URL !== undefined) problems.push(`${name}: MONGO_URL written in the file`);
    const file = s.environment?.MONGO_URL_FILE;
    const volume = file ? volumeAt(s, file.slice(0, file.lastIndexOf('/'))) : undefined;
    const got = file ? (volume ?? `${file}, on no volume`) : 'nothing';
    const expected = usesMongo(name) ? `secrets-mongo-${name}` : 'nothing';
    if (got !== expected) problems.push(`${name}: MONGO_URL_FILE from ${got}, expected ${expected}`);
  }
  for (const own of MONGO_SERVICES)
    for (const [name, s] of Object.entries(services))
      if (name !== own && name !== 'secrets' && s.volumes?.some((v) => v.startsWith(`secrets-mongo-${own}:`)))
        problems.push(`${name} mounts secrets-mongo-${own}`);
  return problems;
}
