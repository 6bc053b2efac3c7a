/**
 * What a service needs once it listens beyond loopback (HOST other than 127.0.0.1, localhost or
 * ::1: a container, a pod, a server), where the defaults that fit one machine stop working
 * (docs/DECISIONS.md, "Deployment configuration is checked at start"): a variable whose absence
 * would lose events or split replicas must be set, and a URL that others reach (a status list's
 * uri signed into every mandate, a wallet's callback) must not name loopback.
 */
export interface DeploymentNeeds {
  /** Variables that must be set (directly or through `<NAME>_FILE`), each with why. */
  required: Readonly<Record<string, string>>;
  /**
   * Variables holding URLs that someone outside the process reaches (a URL, or JSON with URLs in
   * it such as JWT_ISSUERS), each with what it is; unset ones are not checked here.
   */
  publicUrls: Readonly<Record<string, string>>;
  /**
   * Variables of its configuration that make it call out of the cluster over HTTPS (webhooks,
   * issuers' JWKS, KMS), each with what it calls: the network policies must let it out
   * (test/deploy/network-needs.test.ts derives its egress from these and the service URLs).
   */
  outbound?: Readonly<Record<string, string>>;
}

/** Whether a listen address stays on this machine (127.x, localhost, ::1). */
export function listensOnLoopbackOnly(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}

/** The http(s) URLs a variable holds: itself, or every one inside its JSON. */
function urlsIn(value: string): string[] {
  return value.match(/https?:\/\/[^\s"',]+/g) ?? [];
}

function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return listensOnLoopbackOnly(host) || host === '0.0.0.0' || host === '[::]';
  } catch {
    return false;
  }
}

const isSet = (env: Record<string, unknown>, name: string) =>
  [env[name], env[`${name}_FILE`]].some((v) => typeof v === 'string' && v.trim() !== '');

/**
 * The problems of a configuration under `needs`, one `NAME: …` line each (ConfigError's form);
 * none while the service listens on loopback only (`npm start`, `npm run start:services`).
 */
export function deploymentProblems(
  env: Record<string, unknown>,
  host: string,
  needs: DeploymentNeeds,
): string[] {
  if (listensOnLoopbackOnly(host)) return [];
  const problems: string[] = [];
  for (const [name, why] of Object.entries(needs.required))
    if (!isSet(env, name)) problems.push(`${name}: is required when HOST=${host} (${why})`);
  for (const [name, what] of Object.entries(needs.publicUrls)) {
    const value = env[name];
    const loopback = typeof value === 'string' ? urlsIn(value).find(isLoopbackUrl) : undefined;
    if (loopback)
      problems.push(
        `${name}: ${loopback} is a loopback address, but HOST=${host} listens beyond this machine; set the URL others reach (${what})`,
      );
  }
  return problems;
}
