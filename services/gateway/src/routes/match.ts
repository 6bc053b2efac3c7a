import type { Method, RouteRule } from './table';

interface CompiledRoute {
  rule: RouteRule;
  regex: RegExp;
  paramNames: string[];
}

export type MatchResult =
  | { kind: 'match'; rule: RouteRule; params: Record<string, string>; path: string }
  | { kind: 'method_not_allowed'; allowed: Method[] }
  | { kind: 'not_found' };

/** Maps an incoming path (with or without /v1) onto the route table. */
export class RouteMatcher {
  private readonly compiled: CompiledRoute[];

  constructor(rules: RouteRule[]) {
    this.compiled = rules.map((rule) => {
      const paramNames: string[] = [];
      const source = rule.path
        .split('/')
        .map((segment) => {
          if (segment.startsWith(':')) {
            paramNames.push(segment.slice(1));
            return '([^/]+)';
          }
          return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        })
        .join('/');
      return { rule, regex: new RegExp(`^${source}/?$`), paramNames };
    });
  }

  /** The canonical /v1 path: unversioned paths are aliases of v1 (docs/API.md, "Paths and versions"). */
  static canonicalPath(path: string): string {
    return path === '/v1' || path.startsWith('/v1/') ? path : `/v1${path === '/' ? '' : path}`;
  }

  match(method: string, rawPath: string): MatchResult {
    const path = RouteMatcher.canonicalPath(rawPath);
    const allowed: Method[] = [];
    for (const route of this.compiled) {
      const m = route.regex.exec(path);
      if (!m) continue;
      // HEAD of a public GET (a status list, the JWKS) is that GET without its body: caches and
      // CDNs send it (docs/API.md#paths-and-versions); node's server drops the body itself.
      const head = method === 'HEAD' && route.rule.method === 'GET' && route.rule.auth === 'public';
      if (route.rule.method !== method && !head) {
        allowed.push(route.rule.method);
        continue;
      }
      const params: Record<string, string> = {};
      let malformed = false;
      route.paramNames.forEach((name, i) => {
        try {
          params[name] = decodeURIComponent(m[i + 1]!);
        } catch {
          malformed = true;
        }
      });
      if (malformed) return { kind: 'not_found' };
      return { kind: 'match', rule: route.rule, params, path };
    }
    return allowed.length > 0 ? { kind: 'method_not_allowed', allowed } : { kind: 'not_found' };
  }
}
