import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { DOCUMENTED_SECRET_VALUES, secretProblem } from '@mandate/shared/core';
import { itIfAvailable, SYNC_TIMEOUT_MS } from '@mandate/shared/testing';
import { MONGO_SERVICES, composeMongoProblems } from './mongo-credentials';

/**
 * docker-compose.yml ships no secret and no open infrastructure (issue 11 item 5): there is no
 * Docker engine in CI, so the file itself, and its first-start secrets script, are checked here.
 */
const ROOT = path.resolve(__dirname, '../..');
const COMPOSE_FILE = path.join(ROOT, 'docker-compose.yml');
const text = readFileSync(COMPOSE_FILE, 'utf8');

interface Service {
  image?: string;
  ports?: (string | { published?: string | number; host_ip?: string })[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  command?: string[] | string;
  entrypoint?: string[] | string;
}
const compose = parse(text, { merge: true }) as { services: Record<string, Service> };
const services = compose.services;
const INFRA = ['rabbitmq', 'mongo', 'redis'];
const APPS = ['gateway', 'mandates', 'verify', 'identity', 'audit'];

const hasDockerCompose = (() => {
  try {
    execFileSync('docker-compose', ['version'], { stdio: 'ignore', timeout: SYNC_TIMEOUT_MS });
    return true;
  } catch {
    return false;
  }
})();

/** The directory a service mounts `volume` at, if it does. */
const mountOf = (service: Service, volume: string) =>
  service.volumes?.map((v) => v.split(':')).find(([name]) => name === volume)?.[1];

describe('docker-compose.yml', () => {
  itIfAvailable(
    hasDockerCompose,
    'when checked by docker-compose config, then it is valid',
    'docker-compose is not installed (.ci/run installs it)',
    async () => {
      await expect(
        // PUBLIC_BASE_URL is the one variable the operator exports first (docs/DEPLOYMENT.md).
        promisify(execFile)('docker-compose', ['-f', COMPOSE_FILE, 'config', '-q'], {
          cwd: ROOT,
          env: { ...process.env, PUBLIC_BASE_URL: 'https://api.example.com' },
        }),
      ).resolves.toBeDefined();
    },
  );

  it('when read, then mandates keeps its signing key on a volume (as its own process it refuses to start without one)', () => {
    const mandates = services.mandates!;
    const dir = mountOf(mandates, 'signing-keys');
    expect(dir).toBeDefined();
    expect(mandates.environment?.LOCAL_SIGNING_KEY_FILE).toMatch(new RegExp(`^${dir}/`));
  });

  it('when read, then MongoDB, Redis and RabbitMQ publish no port on the host except on 127.0.0.1', () => {
    const published = INFRA.flatMap((name) =>
      (services[name]!.ports ?? [])
        .filter((p) => (typeof p === 'string' ? !p.startsWith('127.0.0.1:') : p.host_ip !== '127.0.0.1'))
        .map((p) => `${name} ${JSON.stringify(p)}`),
    );
    expect(published).toEqual([]);
  });

  it('when read, then no secret is written in it: no documented value, no guest login, secrets only as *_FILE', () => {
    expect(DOCUMENTED_SECRET_VALUES.filter((v) => text.includes(v))).toEqual([]);
    expect(text).not.toMatch(/guest:guest|:-dev-only/);
    const literal = Object.entries(services).flatMap(([name, s]) =>
      Object.keys(s.environment ?? {})
        .filter((k) =>
          /^(INTERNAL_TOKEN_SECRET|OPERATOR_TOKEN|AMQP_URL|REDIS_URL|MONGO_URL|\w*PASS(WORD)?)$/.test(k),
        )
        .map((k) => `${name}.${k}`),
    );
    expect(literal).toEqual([]);
  });

  it('when read, then every service gets its credentials from the secrets volumes, after the secrets service has completed', () => {
    const problems: string[] = [];
    for (const name of [...APPS, ...INFRA]) {
      if (services[name]!.depends_on?.secrets?.condition !== 'service_completed_successfully')
        problems.push(`${name} does not wait for secrets`);
    }
    for (const name of APPS) {
      const s = services[name]!;
      const dir = mountOf(s, 'secrets-services');
      for (const key of ['INTERNAL_TOKEN_SECRET_FILE', 'AMQP_URL_FILE', 'REDIS_URL_FILE']) {
        if (!dir || !s.environment?.[key]?.startsWith(`${dir}/`))
          problems.push(`${name}.${key} not on its secrets volume`);
      }
    }
    const gateway = services.gateway!;
    const operatorDir = mountOf(gateway, 'secrets-gateway');
    if (!operatorDir || !gateway.environment?.OPERATOR_TOKEN_FILE?.startsWith(`${operatorDir}/`))
      problems.push('gateway.OPERATOR_TOKEN_FILE not on its secrets volume');
    // Only the gateway may read the operator token.
    for (const [name, s] of Object.entries(services))
      if (name !== 'gateway' && name !== 'secrets' && mountOf(s, 'secrets-gateway'))
        problems.push(`${name} mounts secrets-gateway`);

    const { redis, mongo, rabbitmq } = services as Record<string, Service>;
    if (!String(redis!.command).includes(`${mountOf(redis!, 'secrets-redis')}/redis.conf`))
      problems.push('redis does not start with the generated requirepass config');
    if (
      !mongo!.environment?.MONGO_INITDB_ROOT_USERNAME ||
      !mongo!.environment?.MONGO_INITDB_ROOT_PASSWORD_FILE
    )
      problems.push('mongo has no root user');
    const rabbitUser = rabbitmq!.environment?.RABBITMQ_DEFAULT_USER;
    if (
      !rabbitUser ||
      rabbitUser === 'guest' ||
      !String(rabbitmq!.entrypoint).includes('RABBITMQ_DEFAULT_PASS="$$(cat ')
    )
      problems.push('rabbitmq has no generated non-guest user');
    expect(problems).toEqual([]);
  });

  it('when read, then mandates, identity and audit each read MONGO_URL from a volume of their own, and gateway and verify none', () => {
    expect(composeMongoProblems(services)).toEqual([]);
  });

  it("when a service reads another service's MongoDB URL, or none, then the check names it", () => {
    const doctored = structuredClone(services);
    doctored.identity!.volumes = [...(doctored.identity!.volumes ?? []), 'secrets-mongo-audit:/run/other:ro'];
    doctored.identity!.environment = {
      ...doctored.identity!.environment!,
      MONGO_URL_FILE: '/run/other/mongo-url',
    };
    delete doctored.audit!.environment!.MONGO_URL_FILE;
    expect(composeMongoProblems(doctored)).toEqual([
      'identity: MONGO_URL_FILE from secrets-mongo-audit, expected secrets-mongo-identity',
      'audit: MONGO_URL_FILE from nothing, expected secrets-mongo-audit',
      'identity mounts secrets-mongo-audit',
    ]);
  });

  describe('the secrets service script', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'compose-secrets-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    // Compose turns $$ into $; the volumes become directories under `dir`.
    const script = (services.secrets!.command as string[])[0]!
      .replaceAll('$$', '$')
      .replaceAll('/secrets/', `${dir}/`);
    for (const volume of [
      'services',
      'gateway',
      'redis',
      'rabbitmq',
      'mongo',
      ...MONGO_SERVICES.map((s) => `mongo-${s}`),
    ])
      mkdirSync(path.join(dir, volume));
    const run = () => execFileSync('sh', ['-c', script], { encoding: 'utf8', timeout: SYNC_TIMEOUT_MS });
    const read = (file: string) => readFileSync(path.join(dir, file), 'utf8').trim();

    it('when run on the first start and again, then it creates strong secrets, prints the operator token the first time only, and keeps them', () => {
      const first = run();
      const operatorToken = read('gateway/operator-token');
      const internal = read('services/internal-token-secret');
      expect(first).toContain(operatorToken);
      expect([secretProblem(operatorToken), secretProblem(internal)]).toEqual([undefined, undefined]);
      expect(operatorToken).not.toBe(internal);
      // Never the internal secret or an infrastructure password in the log.
      for (const f of [
        'services/internal-token-secret',
        'redis/password',
        'rabbitmq/password',
        'mongo/password',
        ...MONGO_SERVICES.map((s) => `mongo/${s}-password`),
      ])
        expect(first).not.toContain(read(f));

      const second = run();
      expect(second).not.toContain(operatorToken);
      expect([read('gateway/operator-token'), read('services/internal-token-secret')]).toEqual([
        operatorToken,
        internal,
      ]);

      expect(read('redis/redis.conf')).toBe(`requirepass ${read('redis/password')}`);
      expect(read('services/redis-url')).toBe(`redis://:${read('redis/password')}@redis:6379`);
      expect(read('services/amqp-url')).toBe(`amqp://mandate:${read('rabbitmq/password')}@rabbitmq:5672`);
      // Each service its own user and password, granted readWrite on its own database only.
      const databases = { mandates: 'mandates', identity: 'mandate_identity', audit: 'mandate_audit' };
      const users = read('mongo/create-users.js');
      for (const s of MONGO_SERVICES) {
        const password = read(`mongo/${s}-password`);
        expect(secretProblem(password)).toBeUndefined();
        expect(read(`mongo-${s}/mongo-url`)).toBe(`mongodb://${s}:${password}@mongo:27017/?authSource=admin`);
        expect(users).toContain(
          `db.getSiblingDB('admin').createUser({ user: '${s}', pwd: '${password}', roles: [{ role: 'readWrite', db: '${databases[s]}' }] });`,
        );
      }
      expect(users.match(/createUser/g)).toHaveLength(3);
      expect(new Set(MONGO_SERVICES.map((s) => read(`mongo/${s}-password`))).size).toBe(3);
      expect(readdirSync(path.join(dir, 'services')).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    });
  });
});

describe('documented secrets', () => {
  it('when the docs, README or compose file print a value for INTERNAL_TOKEN_SECRET or OPERATOR_TOKEN, then services refuse it', () => {
    const files = [
      COMPOSE_FILE,
      path.join(ROOT, 'README.md'),
      ...readdirSync(path.join(ROOT, 'docs')).map((f) => path.join(ROOT, 'docs', f)),
      ...readdirSync(path.join(ROOT, 'services')).map((s) => path.join(ROOT, 'services', s, 'README.md')),
    ].filter((f) => f.endsWith('.md') || f.endsWith('.yml'));
    const accepted: string[] = [];
    for (const file of files) {
      let content: string;
      try {
        content = readFileSync(file, 'utf8');
      } catch {
        continue;
      }
      for (const m of content.matchAll(
        /(?:INTERNAL_TOKEN_SECRET|OPERATOR_TOKEN)\s*[=:]\s*['"]?([^\s'"`]+)/g,
      )) {
        const value = m[1]!;
        // References to another variable or a placeholder are not values.
        if (value.startsWith('$') || value.startsWith('/') || value === '...' || value.startsWith('<'))
          continue;
        if (secretProblem(value) === undefined) accepted.push(`${path.relative(ROOT, file)}: ${value}`);
      }
    }
    expect(accepted).toEqual([]);
  });
});
