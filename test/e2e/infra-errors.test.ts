import { randomBytes } from 'node:crypto';
import { reportStartFailure, startService, type BaseConfig, type ServiceMain } from '@mandate/shared/service';
import { service as audit } from '@mandate/audit/service';
import { service as identity } from '@mandate/identity/service';
import { service as verify } from '@mandate/verify/service';
import { runToExit } from '../support/script-process';
import { freePort } from '../support/stack';

/**
 * docs/TROUBLESHOOTING.md, "At start: infrastructure": unreachable RabbitMQ, Redis or MongoDB, a
 * refused password and an unknown vhost each end the start with one line naming the variable,
 * the URL without its password and what to check; a refused password is not retried forever.
 * In-process through startService and reportStartFailure (what main.ts runs), and once as a
 * process for the exit code.
 */
const SECRET = randomBytes(32).toString('hex');
const BASE = { INTERNAL_TOKEN_SECRET: SECRET, PORT: '0', LOG_LEVEL: 'silent' };
const PASSWORD = 'not-the-password-' + randomBytes(4).toString('hex');
const SERVICES: Record<string, ServiceMain<BaseConfig, unknown, unknown>> = {
  verify: verify as never,
  identity: identity as never,
  audit: audit as never,
};

async function startFailureLines(name: string, env: Record<string, string>): Promise<string[]> {
  let started;
  try {
    started = await startService(SERVICES[name]!, env, { separateProcess: true });
  } catch (err) {
    const lines: string[] = [];
    reportStartFailure(err, (l) => lines.push(l));
    return lines;
  }
  await started.stop();
  return ['(started)'];
}

describe('infrastructure at start: one line naming the URL, no stack trace', () => {
  let closed: number;
  beforeAll(async () => {
    closed = await freePort();
  });

  it('when RabbitMQ is unreachable, then one line names AMQP_URL and its address', async () => {
    const url = `amqp://guest:${PASSWORD}@127.0.0.1:${closed}`;
    const lines = await startFailureLines('verify', {
      ...BASE,
      AMQP_URL: url,
      MANDATES_URL: 'http://127.0.0.1:1',
    });
    expect(lines).toEqual([
      `infrastructure error: AMQP_URL: cannot reach RabbitMQ at amqp://guest:***@127.0.0.1:${closed} (connection refused): check that RabbitMQ runs there and that this host can reach it (host, port, firewall, TLS)`,
    ]);
  });

  it('when Redis is unreachable, then one line names REDIS_URL and its address', async () => {
    const url = `redis://:${PASSWORD}@127.0.0.1:${closed}`;
    const lines = await startFailureLines('verify', {
      ...BASE,
      REDIS_URL: url,
      MANDATES_URL: 'http://127.0.0.1:1',
    });
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(
          `^infrastructure error: REDIS_URL: cannot reach Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${closed}( \\(.+\\))?: check that Redis runs there`,
        ),
      ),
    ]);
  });

  it('when MongoDB is unreachable, then one line names MONGO_URL and its address', async () => {
    const url = `mongodb://mandate:${PASSWORD}@127.0.0.1:${closed}/?serverSelectionTimeoutMS=500`;
    const lines = await startFailureLines('identity', { ...BASE, MONGO_URL: url });
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(
          `^infrastructure error: MONGO_URL: cannot reach MongoDB at mongodb://mandate:\\*\\*\\*@127\\.0\\.0\\.1:${closed}/.* check that MongoDB runs there`,
        ),
      ),
    ]);
  });

  it('when RabbitMQ refuses the password, then one line says so, without the password', async () => {
    const lines = await startFailureLines('audit', {
      ...BASE,
      AMQP_URL: `amqp://guest:${PASSWORD}@127.0.0.1:5672`,
    });
    expect(lines).toEqual([
      'infrastructure error: AMQP_URL: RabbitMQ at amqp://guest:***@127.0.0.1:5672 refused the user name or password: check the credentials in AMQP_URL (or AMQP_URL_FILE)',
    ]);
  });

  it('when the vhost does not exist, then one line names it', async () => {
    const lines = await startFailureLines('audit', {
      ...BASE,
      AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672/no-such-vhost-38',
    });
    expect(lines).toEqual([
      'infrastructure error: AMQP_URL: RabbitMQ at amqp://guest:***@127.0.0.1:5672/no-such-vhost-38 refused the vhost "no-such-vhost-38": check that the vhost (the URL\'s path) exists and the user may use it (rabbitmqctl list_vhosts, list_permissions)',
    ]);
  });

  it('when audit runs as its own process with a refused password, then it prints the one line and exits 1 instead of retrying', async () => {
    const { code, lines } = await runToExit('services/audit/src/main.ts', {
      ...BASE,
      AMQP_URL: `amqp://guest:${PASSWORD}@127.0.0.1:5672`,
    });
    expect({ code, lines }).toEqual({
      code: 1,
      lines: [expect.stringMatching(/^infrastructure error: AMQP_URL: .* refused the user name or password/)],
    });
    expect(lines.join('\n')).not.toContain(PASSWORD);
  });
});
