import type { Request, Response, Router } from 'express';
import type { ContractInput, ContractResponse, Method, RouteShape } from '../contract/contract';
import { parseOrThrow } from '../core/errors';
import { sendError } from './http';

/** A contract with the code that answers it, ready to mount. */
export interface Implementation {
  contract: RouteShape;
  handle: (req: Request, res: Response) => Promise<void>;
}

/**
 * Binds a handler to its contract: `implement(contract)(handler)`. Params, query and body are parsed
 * with the contract's schemas (parseOrThrow, so a 400 names the field), and what the handler returns
 * must be one of the contract's statuses with that status's body — the compiler checks it. (Two
 * calls, so the contract's type is fixed before the handler is checked: in one call TypeScript
 * would widen `status: 201` to number while it infers.)
 */
export function implement<const C extends RouteShape>(contract: C) {
  return (
    handler: (input: ContractInput<C>, req: Request) => Promise<ContractResponse<C>>,
  ): Implementation => ({
    contract,
    handle: async (req, res) => {
      const answer = await handler(parseInput(contract, req), req);
      for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, value);
      res.status(answer.status).json(answer.body);
    },
  });
}

/**
 * A handler that writes the response itself (a stream, or a body serialised ahead): it still
 * belongs to its contract (mounting, 405, the document); params and query are parsed, the body is left to it.
 */
export function implementRaw<const C extends RouteShape>(contract: C) {
  return (
    handler: (input: Omit<ContractInput<C>, 'body'>, req: Request, res: Response) => Promise<void>,
  ): Implementation => ({
    contract,
    handle: async (req, res) => {
      const { params, query } = parseInput(contract, req, false);
      await handler({ params, query }, req, res);
    },
  });
}

function parseInput<C extends RouteShape>(contract: C, req: Request, withBody = true): ContractInput<C> {
  const request = contract.request ?? {};
  const params = request.params ? parseOrThrow(request.params, req.params, 'path') : {};
  const query = request.query ? parseOrThrow(request.query, req.query, 'query') : undefined;
  let body: unknown;
  if (withBody && request.body) {
    // An optional body (every member optional) may be left out entirely.
    body = parseOrThrow(request.body, request.bodyRequired === false ? (req.body ?? {}) : req.body);
  }
  return { params, query, body } as ContractInput<C>;
}

/**
 * Mounts implementations on a router, grouped by path in the order given, and answers 405 with
 * Allow for every other method of a known path (as `route` does), so it never falls through to a 404.
 */
export function mountContracts(router: Router, implementations: Implementation[]): void {
  const byPath = new Map<string, Implementation[]>();
  for (const impl of implementations) {
    const list = byPath.get(impl.contract.path) ?? [];
    list.push(impl);
    byPath.set(impl.contract.path, list);
  }
  for (const [path, list] of byPath) {
    const allowed = list.map((impl) => impl.contract.method);
    for (const impl of list) router[lower(impl.contract.method)](path, impl.handle);
    router.all(path, (_req: Request, res: Response) => {
      res.setHeader('Allow', allowed.join(', '));
      sendError(res, 405, {
        error: 'METHOD_NOT_ALLOWED',
        message: `Method not allowed; use ${allowed.join(', ')}`,
      });
    });
  }
}

const lower = (method: Method) => method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
