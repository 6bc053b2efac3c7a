import { newId } from '@mandate/shared/core';
import { MandateClient } from '../../packages/client/src';
import { startScript, type ScriptProcess } from '../support/script-process';
import {
  apiClient,
  createTenant,
  deleteRedisKeys,
  deleteTopology,
  freePort,
  README_MANDATE,
} from '../support/stack';

/**
 * AuthZEN on the five processes of `npm run start:services` (docs/API.md#authzen), started as its
 * script runs (tsx scripts/services.ts, two verify replicas) in a namespace of its own: the three
 * endpoints through the gateway with a real `verify` key, each answer held to what POST /v1/verify
 * answers for the same input.
 */
const PDP = 'https://pdp.example.com';

interface Launcher extends ScriptProcess {
  url: string;
  operatorToken: string;
  pids: number[];
}

async function launch(namespace: string): Promise<Launcher> {
  const port = await freePort();
  const launcher = await startScript(
    'scripts/services.ts',
    {
      PORT: String(port),
      LOG_LEVEL: 'warn',
      AMQP_NAMESPACE: namespace,
      REDIS_PREFIX: `${namespace}:`,
      PUBLIC_BASE_URL: PDP,
    },
    (lines) => lines.some((l) => l.includes('Ctrl-C stops every service')),
    'npm run start:services',
  );
  const pids = launcher.lines
    .map((l) => /^\[launcher\] \S+ pid (\d+) /.exec(l)?.[1])
    .filter((p): p is string => p !== undefined)
    .map(Number);
  const token = launcher.lines.map((l) => /export OPERATOR_TOKEN=(\S+)/.exec(l)?.[1]).find(Boolean)!;
  return { ...launcher, url: `http://127.0.0.1:${port}`, operatorToken: token, pids };
}

type Evaluation = { decision: boolean; context: { reason: string; decision_id: string } };

describe('AuthZEN through the gateway (npm run start:services)', () => {
  const namespace = `test-${newId('req')}`;
  let launcher: Launcher | undefined;
  let api: ReturnType<typeof apiClient>;
  let tenantId: string;
  let pep: string;
  let mandateId: string;

  beforeAll(async () => {
    launcher = await launch(namespace);
    api = apiClient(launcher.url);
    const created = await createTenant(
      { gateway: { url: launcher.url }, operatorToken: launcher.operatorToken },
      { name: 'AuthZEN services' },
    );
    tenantId = created.tenant.id;
    const mandate = await api('POST', '/v1/mandates', { auth: created.auth, body: README_MANDATE });
    expect(mandate.status).toBe(201);
    mandateId = mandate.body.id;
    // The policy enforcement point's own key: the verify scope only, as docs/AUTHZEN.md asks.
    const key = await api('POST', `/v1/tenants/${tenantId}/api-keys`, {
      auth: created.auth,
      body: { name: 'pep', scopes: ['verify'] },
    });
    expect(key.status).toBe(201);
    pep = `${tenantId}:${key.body.api_key}`;
  }, 180_000);

  afterAll(async () => {
    await launcher?.stop();
    // Should the launcher have failed to stop one, it must not outlive the test.
    for (const pid of launcher?.pids ?? []) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await deleteTopology(namespace).catch(() => undefined);
    await deleteRedisKeys(`${namespace}:*`);
  }, 60_000);

  /** An evaluation of README_MANDATE's delegate paying `amount` EUR cents, and its verify body. */
  const evaluation = (amount: number) => ({
    subject: { type: 'agent', id: 'agent_42' },
    action: { name: 'payments:create' },
    resource: { type: 'mandate' as const, id: mandateId },
    context: { amount, currency: 'EUR' },
  });
  const verifyBody = (amount: number) => ({
    mandate_id: mandateId,
    action: 'payments:create',
    delegate_id: 'agent_42',
    amount,
    currency: 'EUR',
  });
  const ALLOWED = 1200;
  const DENIED = 999_999;

  it('when an evaluation is allowed or denied, then it answers 200 with verify’s decision, reason and decision_id', async () => {
    for (const [amount, decision, reason] of [
      [ALLOWED, true, 'OK'],
      [DENIED, false, 'AMOUNT_EXCEEDS_LIMIT'],
    ] as const) {
      const answer = await api('POST', '/access/v1/evaluation', { auth: pep, body: evaluation(amount) });
      const verify = await api('POST', '/v1/verify', { auth: pep, body: verifyBody(amount) });
      expect(verify.status).toBe(200);
      expect({ status: answer.status, body: answer.body }).toEqual({
        status: 200,
        body: {
          decision,
          context: {
            reason,
            decision_id: verify.body.decision_id,
            mandate_id: mandateId,
            mandate_state: 'ACTIVE',
            mandate_version: 1,
          },
        },
      });
      expect({ decision: verify.body.decision, reason: verify.body.reason }).toEqual({
        decision: decision ? 'ALLOW' : 'DENY',
        reason,
      });
    }
  }, 60_000);

  it('when a batch is sent with each evaluations_semantic, then each answers in order up to where it stops, with verify’s decision_ids', async () => {
    const verified = {
      allow: (await api('POST', '/v1/verify', { auth: pep, body: verifyBody(ALLOWED) })).body.decision_id,
      deny: (await api('POST', '/v1/verify', { auth: pep, body: verifyBody(DENIED) })).body.decision_id,
    };
    const A = { context: { amount: ALLOWED, currency: 'EUR' } };
    const D = { context: { amount: DENIED, currency: 'EUR' } };
    const cases = [
      // The semantic, the items, what the answer lists.
      ['execute_all', [A, D, A, D], ['allow', 'deny', 'allow', 'deny']],
      ['deny_on_first_deny', [A, A, D, A], ['allow', 'allow', 'deny']],
      ['permit_on_first_permit', [D, D, A, D], ['deny', 'deny', 'allow']],
    ] as const;
    for (const [semantic, items, expected] of cases) {
      const { context: _default, ...defaults } = evaluation(ALLOWED);
      const batch = await api('POST', '/access/v1/evaluations', {
        auth: pep,
        body: { ...defaults, options: { evaluations_semantic: semantic }, evaluations: items },
      });
      expect(batch.status).toBe(200);
      expect(
        (batch.body.evaluations as Evaluation[]).map((e) => [
          e.decision,
          e.context.reason,
          e.context.decision_id,
        ]),
      ).toEqual(
        expected.map((d) =>
          d === 'allow' ? [true, 'OK', verified.allow] : [false, 'AMOUNT_EXCEEDS_LIMIT', verified.deny],
        ),
      );
    }
  }, 60_000);

  it('when a request is not an evaluation, a batch has 101 items, an item is bad or a mandate unknown, then it is AuthZEN’s answer for each', async () => {
    const malformed = await api('POST', '/access/v1/evaluation', {
      auth: pep,
      body: { ...evaluation(ALLOWED), action: { name: '' } },
      headers: { 'x-request-id': 'req-authzen-services' },
    });
    expect({
      status: malformed.status,
      error: malformed.body.error,
      keys: Object.keys(malformed.body).sort(),
      requestId: malformed.headers.get('x-request-id'),
    }).toEqual({
      status: 400,
      error: 'BAD_REQUEST',
      keys: ['error', 'message'],
      requestId: 'req-authzen-services',
    });

    const tooMany = await api('POST', '/access/v1/evaluations', {
      auth: pep,
      body: { ...evaluation(ALLOWED), evaluations: Array.from({ length: 101 }, () => ({})) },
    });
    expect({ status: tooMany.status, keys: Object.keys(tooMany.body).sort() }).toEqual({
      status: 400,
      keys: ['error', 'message'],
    });

    const mixed = await api('POST', '/access/v1/evaluations', {
      auth: pep,
      body: {
        ...evaluation(ALLOWED),
        evaluations: [{ action: { name: '' } }, {}, { resource: { type: 'mandate', id: 'mdt_unknown' } }],
      },
    });
    expect({ status: mixed.status, body: mixed.body }).toEqual({
      status: 200,
      body: {
        evaluations: [
          {
            decision: false,
            context: { error: { status: 400, message: expect.stringContaining('action.name') } },
          },
          { decision: true, context: expect.objectContaining({ reason: 'OK', mandate_id: mandateId }) },
          { decision: false, context: { reason: 'MANDATE_NOT_FOUND', mandate_id: 'mdt_unknown' } },
        ],
      },
    });
  });

  it('when @mandate/client asks, then its three AuthZEN methods answer, and the OpenAPI document lists the three paths', async () => {
    const client = new MandateClient({ baseUrl: launcher!.url, apiKey: pep });
    const one = await client.authzen.accessEvaluation(evaluation(ALLOWED));
    const many = await client.authzen.accessEvaluations({ ...evaluation(DENIED), evaluations: [{}, {}] });
    const metadata = await client.authzen.getAuthzenConfiguration();
    expect({
      one: [one.decision, 'reason' in one.context && one.context.reason],
      many: 'evaluations' in many ? many.evaluations.map((e) => e.decision) : many,
      pdp: metadata.policy_decision_point,
    }).toEqual({ one: [true, 'OK'], many: [false, false], pdp: PDP });

    const openapi = await api('GET', '/v1/openapi.json');
    const paths = openapi.body.paths as Record<string, Record<string, { operationId: string }>>;
    expect([
      paths['/v1/access/v1/evaluation']?.post?.operationId,
      paths['/v1/access/v1/evaluations']?.post?.operationId,
      paths['/v1/.well-known/authzen-configuration']?.get?.operationId,
    ]).toEqual(['accessEvaluation', 'accessEvaluations', 'getAuthzenConfiguration']);
  });

  it('when the well-known configuration is asked without a credential, then it names the endpoints under PUBLIC_BASE_URL', async () => {
    const metadata = await api('GET', '/.well-known/authzen-configuration');
    expect({ status: metadata.status, body: metadata.body }).toEqual({
      status: 200,
      body: {
        policy_decision_point: PDP,
        access_evaluation_endpoint: `${PDP}/access/v1/evaluation`,
        access_evaluations_endpoint: `${PDP}/access/v1/evaluations`,
      },
    });
  });

  it('when a key without the verify scope asks either evaluation endpoint, then it is 403 in the error shape', async () => {
    const admin = await createTenant(
      { gateway: { url: launcher!.url }, operatorToken: launcher!.operatorToken },
      { name: 'AuthZEN reader' },
    );
    const key = await api('POST', `/v1/tenants/${admin.tenant.id}/api-keys`, {
      auth: admin.auth,
      body: { name: 'reader', scopes: ['mandates:read'] },
    });
    expect(key.status).toBe(201);
    const reader = `${admin.tenant.id}:${key.body.api_key}`;
    const answers = [];
    for (const path of ['/access/v1/evaluation', '/access/v1/evaluations']) {
      const res = await api('POST', path, { auth: reader, body: evaluation(ALLOWED) });
      answers.push({ path, status: res.status, body: res.body });
    }
    expect(answers).toEqual(
      ['/access/v1/evaluation', '/access/v1/evaluations'].map((path) => ({
        path,
        status: 403,
        body: { error: 'FORBIDDEN', message: 'API key lacks required scope: verify' },
      })),
    );
  });
});
