import { z } from 'zod';
import { commonConfigShape, env } from '../src/core/config';
import { startService, type ServiceMain } from '../src/service/main';
import type { RunningServer } from '../src/http/server';

const configSchema = z.object({ ...commonConfigShape, PORT: env.port(9999), HOST: env.string('127.0.0.1') });
type Config = z.output<typeof configSchema>;

/** A service whose every step is recorded, so the order startService follows shows. */
function recordedService(
  steps: string[],
  startFails = false,
): ServiceMain<Config, string, { deps?: string }> {
  return {
    name: 'recorded',
    configSchema,
    wire: async (config, _logger, overrides) => {
      steps.push(`wire ${config.PORT} ${overrides?.deps ?? 'own deps'}`);
      return { deps: overrides?.deps ?? 'own deps', close: async () => void steps.push('close deps') };
    },
    createApp: (deps) => ({
      start: async (port, host) => {
        steps.push(`start ${deps} on ${host}:${port}`);
        if (startFails) throw new Error('port in use');
        return { url: `http://${host}:${port}` } as RunningServer;
      },
      stop: async () => void steps.push('stop app'),
    }),
  };
}

describe('startService (the steps of runService and of the embedded launcher)', () => {
  it('when started, then it parses the environment, wires with the overrides, listens on PORT/HOST, and stop() stops the app before closing the deps', async () => {
    const steps: string[] = [];
    const started = await startService(
      recordedService(steps),
      { PORT: '0', HOST: '127.0.0.2' },
      { overrides: { deps: 'shared bus' }, logLevel: 'silent' },
    );
    await started.stop();
    expect({ url: started.server.url, port: started.config.PORT, deps: started.deps, steps }).toEqual({
      url: 'http://127.0.0.2:0',
      port: 0,
      deps: 'shared bus',
      steps: ['wire 0 shared bus', 'start shared bus on 127.0.0.2:0', 'stop app', 'close deps'],
    });
  });

  it('when the app fails to start, then the app is stopped, the deps are closed and the error propagates', async () => {
    const steps: string[] = [];
    await expect(startService(recordedService(steps, true), {}, { logLevel: 'silent' })).rejects.toThrow(
      'port in use',
    );
    expect(steps).toEqual([
      'wire 9999 own deps',
      'start own deps on 127.0.0.1:9999',
      'stop app',
      'close deps',
    ]);
  });

  it('when the app cannot be created, then the deps are closed and the error propagates', async () => {
    const steps: string[] = [];
    const main = recordedService(steps);
    const broken = {
      ...main,
      createApp: () => {
        throw new Error('bad deps');
      },
    };
    await expect(startService(broken, {}, { logLevel: 'silent' })).rejects.toThrow('bad deps');
    expect(steps).toEqual(['wire 9999 own deps', 'close deps']);
  });

  it('when the environment is invalid, then nothing is wired and the error names the variable', async () => {
    const steps: string[] = [];
    await expect(startService(recordedService(steps), { PORT: 'eighty' })).rejects.toThrow(/PORT/);
    expect(steps).toEqual([]);
  });
});
