import type { ServerResponse, IncomingMessage } from 'node:http';
import { MAX_EVALUATIONS } from '@mandate/verify';
import type { RouteRule } from '../routes/table';

/**
 * How many requests one call counts as in the limits (docs/API.md#authzen): one, but an AuthZEN
 * batch counts one per item it carries (1 to 100), so 100 evaluations in one call spend what 100
 * verifies would. The body is read here (after authentication) and kept on the call for the
 * forward step; a body that is not a batch of 1 to 100 items counts one (verify answers it 400).
 */
export function limitCostStep(
  readBody: (req: IncomingMessage, res: ServerResponse) => Promise<Buffer | undefined>,
) {
  return async (
    call: { req: IncomingMessage; res: ServerResponse; body?: { raw: Buffer | undefined } },
    rule: RouteRule,
  ): Promise<number> => {
    if (rule.limitCost !== 'evaluations') return 1;
    const raw = await readBody(call.req, call.res);
    call.body = { raw };
    return evaluationsIn(raw);
  };
}

/** The items of an AuthZEN batch body, when it carries 1 to MAX_EVALUATIONS of them; else 1. */
export function evaluationsIn(raw: Buffer | undefined): number {
  if (!raw || raw.length === 0) return 1;
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    const items = (parsed as { evaluations?: unknown } | null)?.evaluations;
    return Array.isArray(items) && items.length >= 1 && items.length <= MAX_EVALUATIONS ? items.length : 1;
  } catch {
    return 1;
  }
}
