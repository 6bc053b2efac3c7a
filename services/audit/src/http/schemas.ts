import { z } from 'zod';
import {
  EVENT_TYPES,
  auditEventSchema,
  errorResponse,
  listQueryShape,
  pageSchema,
  type EventType,
  type OpenApiContribution,
} from '@mandate/shared';
import { evidenceOpenApi } from './evidence-schemas';

const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

/** `type=A,B`: a comma list of event types; an unknown one is a 400 that names it. */
const eventTypeList = z
  .string()
  .max(1000)
  .transform((value, ctx): EventType[] => {
    const parts = value
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    const unknown = parts.filter((p) => !KNOWN_TYPES.has(p));
    if (unknown.length > 0) {
      ctx.addIssue({ code: 'custom', message: `unknown event type ${unknown.join(', ')}` });
      return z.NEVER;
    }
    if (parts.length === 0) {
      ctx.addIssue({ code: 'custom', message: 'must name at least one event type' });
      return z.NEVER;
    }
    return [...new Set(parts)] as EventType[];
  });

const isoInstant = z.iso.datetime({
  offset: true,
  error: 'must be an ISO 8601 datetime, e.g. 2026-11-21T12:00:00.000Z',
});

/** Strict: an unknown query parameter is a 400 naming it, rather than a filter silently ignored. */
export const listEventsQuerySchema = z.strictObject({
  type: eventTypeList.optional(),
  resource_id: z.string().min(1).max(256).optional(),
  key_id: z.string().min(1).max(256).optional(),
  since: isoInstant.optional(),
  until: isoInstant.optional(),
  ...listQueryShape,
});
export type ListEventsQuery = z.output<typeof listEventsQuerySchema>;

export const eventIdParamsSchema = z.object({ id: z.string() });

export const eventSchema = auditEventSchema;
export const eventPageSchema = pageSchema(auditEventSchema);

export const openApi: OpenApiContribution = (registry) => {
  // Schemas are inlined: registry.register() needs extendZodWithOpenApi(z), which the kernel does not call.
  registry.registerPath({
    method: 'get',
    path: '/v1/events',
    summary: 'List audit events, newest first',
    description:
      `Scope events:read. type is a comma list of: ${EVENT_TYPES.join(', ')}. ` +
      'since is inclusive, until exclusive (occurred_at). key_id matches actor.key_id.',
    tags: ['Events'],
    request: { query: listEventsQuerySchema },
    responses: {
      200: { description: 'A page of events', content: { 'application/json': { schema: eventPageSchema } } },
      400: errorResponse('Invalid filter, limit or cursor, or an unknown query parameter'),
      401: errorResponse('Missing or invalid credentials'),
      403: errorResponse('API key lacks required scope: events:read'),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/v1/events/{id}',
    summary: 'Get one audit event',
    tags: ['Events'],
    request: { params: eventIdParamsSchema },
    responses: {
      200: { description: 'The event', content: { 'application/json': { schema: eventSchema } } },
      401: errorResponse('Missing or invalid credentials'),
      403: errorResponse('API key lacks required scope: events:read'),
      404: errorResponse('Event not found'),
    },
  });
  evidenceOpenApi(registry);
};
