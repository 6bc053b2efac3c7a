/**
 * The launcher's check of the whole configuration before it spawns anything (docs/CONFIGURATION.md,
 * "The launchers"): each process's environment, exactly as it will get it, through the function its
 * main.ts starts with (serviceConfig). Kept apart from scripts/services.ts so the end-to-end tests,
 * which start their stacks through startServices, do not load the five services' code.
 */
import { ConfigError } from '@mandate/shared/core';
import { serviceConfig, type BaseConfig, type ServiceMain } from '@mandate/shared/service';
import { service as audit } from '@mandate/audit/service';
import { service as gateway } from '@mandate/gateway/service';
import { service as identity } from '@mandate/identity/service';
import { service as mandates } from '@mandate/mandates/service';
import { service as verify } from '@mandate/verify/service';

const MAINS_BY_NAME = { gateway, mandates, verify, identity, audit };
type ServiceName = keyof typeof MAINS_BY_NAME;
/** One process about to be spawned (scripts/services.ts, PlannedProcess). */
interface Planned {
  service: ServiceName;
  env: Record<string, string>;
}
type Main = Pick<
  ServiceMain<BaseConfig, unknown>,
  'configSchema' | 'separateProcessConfigSchema' | 'deployment'
>;
const MAINS = MAINS_BY_NAME as unknown as Record<ServiceName, Main>;

/**
 * Every problem of every planned process, one `NAME: problem (services)` line each: a problem
 * several services share (a weak INTERNAL_TOKEN_SECRET) is one line naming all of them.
 */
export function launchConfigProblems(planned: Planned[]): string[] {
  const services = new Map<string, string[]>();
  for (const { service, env } of planned) {
    try {
      // What spawnService adds: LOG_LEVEL unless set, and HOST (loopback unless set).
      serviceConfig(MAINS[service], { LOG_LEVEL: 'warn', ...env, HOST: env.HOST ?? '127.0.0.1' }, true);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      for (const problem of err.problems) {
        const named = services.get(problem) ?? [];
        if (!named.includes(service)) named.push(service);
        services.set(problem, named);
      }
    }
  }
  return [...services].map(([problem, names]) => `${problem} (${names.join(', ')})`);
}

/** Throws a ConfigError of launchConfigProblems' lines, if any. */
export function checkLaunchConfig(planned: Planned[]): void {
  const problems = launchConfigProblems(planned);
  if (problems.length > 0) throw new ConfigError(problems);
}
