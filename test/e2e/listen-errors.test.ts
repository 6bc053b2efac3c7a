import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { ListenError, listenProblem } from '@mandate/shared/http';
import { reportStartFailure, startService, type BaseConfig, type ServiceMain } from '@mandate/shared/service';
import { service as identity } from '@mandate/identity/service';
import { runToExit } from '../support/script-process';
import { freePort } from '../support/stack';

/**
 * docs/TROUBLESHOOTING.md, "The service does not start": a port that is taken (EADDRINUSE) or not
 * permitted (EACCES), or a HOST that is not this machine's, ends the start with one
 * `listen error: …` line naming PORT or HOST and what to check, and exit 1 — for a service as its
 * own process and for both launchers, which check the gateway's port before they start anything.
 */
const BASE = { INTERNAL_TOKEN_SECRET: randomBytes(32).toString('hex'), LOG_LEVEL: 'silent' };
const inUse = (port: number) =>
  `listen error: PORT ${port} is in use by another process on 127.0.0.1: stop that process, or set PORT to a free port`;

/** What identity's main.ts prints when its start fails (the same steps, in this process). */
async function startFailureLines(env: Record<string, string>, separateProcess = false): Promise<string[]> {
  const lines: string[] = [];
  await startService(identity as unknown as ServiceMain<BaseConfig, unknown, unknown>, env, {
    separateProcess,
  }).then(
    (started) => started.stop().then(() => lines.push('(started)')),
    (err: unknown) => reportStartFailure(err, (l) => lines.push(l)),
  );
  return lines;
}

describe('a port the process cannot listen on: one line, exit 1', () => {
  let taken: number;
  let occupier: Server;
  beforeAll(async () => {
    taken = await freePort();
    // It only holds the port and answers nothing: a client that connects to it (anything on the
    // machine still trying an address this port had before) would wait forever, and close() would
    // wait for that client. Once it closed its hook outlived 30 s in a full run; its connections
    // are now ended with it.
    occupier = createServer((socket) => {
      held.add(socket);
      socket.once('close', () => held.delete(socket));
    });
    await new Promise<void>((resolve) => occupier.listen(taken, '127.0.0.1', resolve));
  });
  const held = new Set<Socket>();
  afterAll(
    () =>
      new Promise<void>((resolve) => {
        occupier.close(() => resolve());
        for (const socket of held) socket.destroy();
      }),
  );

  it('when a service starts on a taken port (the steps of its main.ts, in-process), then it reports exactly one line', async () => {
    expect(await startFailureLines({ ...BASE, PORT: String(taken) }, true)).toEqual([inUse(taken)]);
  });

  it('when a service, npm start and npm run start:services are started on a taken port, then each prints only that line and exits 1', async () => {
    const runs = await Promise.all([
      runToExit('services/identity/src/main.ts', { ...BASE, PORT: String(taken) }),
      runToExit('scripts/embedded.ts', { PORT: String(taken), LOG_LEVEL: 'silent' }),
      runToExit('scripts/services.ts', { PORT: String(taken), LOG_LEVEL: 'silent' }),
    ]);
    // start:services first says what it is about to start (`[launcher] …` lines); nothing else.
    const [service, embedded, launcher] = runs;
    expect([service, embedded]).toEqual([
      { code: 1, lines: [inUse(taken)] },
      { code: 1, lines: [inUse(taken)] },
    ]);
    expect({
      code: launcher!.code,
      lines: launcher!.lines.filter((l) => !l.startsWith('[launcher] ')),
      last: launcher!.lines.at(-1),
    }).toEqual({ code: 1, lines: [inUse(taken)], last: inUse(taken) });
  }, 120_000);

  it('when HOST is not an address of this machine, then the start names HOST in one line', async () => {
    // 192.0.2.0/24 is reserved for documentation (RFC 5737): no interface of this machine has it.
    // In-process without the separate-process rules, which would first ask for the URLs a service
    // listening beyond loopback needs (docs/CONFIGURATION.md).
    expect(await startFailureLines({ ...BASE, PORT: '0', HOST: '192.0.2.1' })).toEqual([
      'listen error: HOST 192.0.2.1 is not an address of this machine: set HOST to one of its addresses, 0.0.0.0 (all) or 127.0.0.1',
    ]);
  });

  // The tests run as root here, where every port is permitted: EACCES is given as node reports it.
  it('when listening is not permitted (EACCES), then the line names the port and what to change', () => {
    const denied = Object.assign(new Error('listen EACCES: permission denied 0.0.0.0:80'), {
      code: 'EACCES',
    });
    expect(listenProblem(denied, 80, '0.0.0.0')).toBe(
      'PORT 80 is not permitted on 0.0.0.0: ports below 1024 need privileges (CAP_NET_BIND_SERVICE); set PORT to 1024 or above',
    );
    expect(listenProblem(denied, 8080, '0.0.0.0')).toMatch(
      /^PORT 8080 is not permitted on 0\.0\.0\.0: check/,
    );
    const lines: string[] = [];
    reportStartFailure(new ListenError(listenProblem(denied, 80, '0.0.0.0')!), (l) => lines.push(l));
    expect(lines).toEqual([expect.stringMatching(/^listen error: PORT 80 is not permitted/)]);
    expect(
      listenProblem(Object.assign(new Error('x'), { code: 'ECONNRESET' }), 80, '0.0.0.0'),
    ).toBeUndefined();
  });
});
