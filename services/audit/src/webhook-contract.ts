import { z } from 'zod';
import { labelText } from '@mandate/shared/core';
import { EVENT_TYPES } from '@mandate/shared/events';
import { listing, listOrderShape, listQueryShape, routeGroup } from '@mandate/shared/contract';
import { oneOrNotFound } from './one-or-not-found';

/**
 * The webhook endpoints' part of the audit service's contract (re-exported by contract.ts, the
 * package entry): outbound delivery of a tenant's events to its own HTTPS endpoints, signed per
 * the Standard Webhooks specification. Only zod and the shared kernel here.
 */

export const WEBHOOK_ENDPOINT_STATUSES = ['ENABLED', 'DISABLED'] as const;
export type WebhookEndpointStatus = (typeof WEBHOOK_ENDPOINT_STATUSES)[number];
export const WEBHOOK_DELIVERY_STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** At most this many endpoints per tenant (deleted ones do not count). */
export const MAX_WEBHOOK_ENDPOINTS = 20;
/** The event type of `POST …/test`: not an audit event, never stored in the trail. */
export const WEBHOOK_TEST_EVENT_TYPE = 'webhook.test';
export const WEBHOOK_URL_MAX = 2048;
export const WEBHOOK_DESCRIPTION_MAX = 200;

const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

/** A non-empty set of event types, or exactly ["*"] for every type. */
const eventTypesSchema = z
  .array(z.string().max(100))
  .min(1, 'must name at least one event type, or ["*"]')
  .max(EVENT_TYPES.length)
  .superRefine((types, ctx) => {
    if (new Set(types).size !== types.length)
      ctx.addIssue({ code: 'custom', message: 'must not repeat a type' });
    if (types.includes('*')) {
      if (types.length > 1)
        ctx.addIssue({ code: 'custom', message: 'must be ["*"] alone or a list of types' });
      return;
    }
    const unknown = types.filter((t) => !KNOWN_TYPES.has(t));
    if (unknown.length > 0)
      ctx.addIssue({ code: 'custom', message: `unknown event type ${unknown.join(', ')}` });
  });

/**
 * The shape of a webhook URL: https (http only to a loopback host when the deployment allows it,
 * which the service checks), no credentials, no fragment. The address rules are the service's.
 */
const webhookUrlSchema = z
  .string()
  .max(WEBHOOK_URL_MAX)
  .superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be an absolute URL' });
      return;
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      ctx.addIssue({ code: 'custom', message: 'must be an https URL' });
    if (url.username || url.password) ctx.addIssue({ code: 'custom', message: 'must not carry credentials' });
    if (url.hash || value.includes('#'))
      ctx.addIssue({ code: 'custom', message: 'must not carry a fragment' });
  })
  // Normalised as the WHATWG URL parser writes it (lowercase host, default port dropped).
  .transform((value) => new URL(value).href);

const descriptionSchema = labelText().max(WEBHOOK_DESCRIPTION_MAX);

export const createWebhookEndpointBody = z.strictObject({
  url: webhookUrlSchema,
  event_types: eventTypesSchema,
  description: descriptionSchema.optional(),
});
export type CreateWebhookEndpointBody = z.output<typeof createWebhookEndpointBody>;

export const updateWebhookEndpointBody = z
  .strictObject({
    url: webhookUrlSchema.optional(),
    event_types: eventTypesSchema.optional(),
    description: descriptionSchema.nullable().optional(),
    status: z.enum(WEBHOOK_ENDPOINT_STATUSES).optional(),
  })
  .refine(
    (body) => Object.keys(body).length > 0,
    'must change at least one of url, event_types, description, status',
  );
export type UpdateWebhookEndpointBody = z.output<typeof updateWebhookEndpointBody>;

export const listWebhookEndpointsQuery = z.strictObject(listQueryShape);
export const listWebhookDeliveriesQuery = z.strictObject({
  status: z.enum(WEBHOOK_DELIVERY_STATUSES).optional(),
  ...listQueryShape,
  ...listOrderShape,
});

const timestamp = z.iso.datetime();

export const webhookEndpointSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    event_types: z.array(z.string()),
    status: z.enum(WEBHOOK_ENDPOINT_STATUSES),
    /** Why it is DISABLED: `manual` (a PATCH) or `failing` (every delivery failed for 5 days); null when ENABLED. */
    disabled_reason: z.enum(['manual', 'failing']).nullable(),
    /** Since when every attempt to it has failed; null while it answers. */
    failing_since: timestamp.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'WebhookEndpoint' });
export type WebhookEndpointView = z.infer<typeof webhookEndpointSchema>;

const secretMember = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/)
  .describe('The signing secret, whsec_ + base64 of 32 random bytes. Shown once; store it now.');

export const createdWebhookEndpointSchema = webhookEndpointSchema
  .extend({ secret: secretMember })
  .meta({ id: 'CreatedWebhookEndpoint' });

export const rotatedWebhookSecretSchema = webhookEndpointSchema
  .extend({
    secret: secretMember,
    previous_secret_expires_at: timestamp.describe(
      'Until then deliveries carry a signature with the previous secret too (24 hours)',
    ),
  })
  .meta({ id: 'RotatedWebhookSecret' });

export const deletedWebhookEndpointSchema = z
  .object({ id: z.string(), deleted: z.literal(true) })
  .meta({ id: 'DeletedWebhookEndpoint' });

export const webhookAttemptSchema = z.object({
  attempted_at: timestamp,
  /** The receiver's HTTP status; null when there was no answer. */
  status_code: z.int().nullable(),
  /** Why there was no usable answer (TIMEOUT, UNREACHABLE, ADDRESS_NOT_ALLOWED, REDIRECT…); null on a 2xx. */
  error: z.string().nullable(),
  duration_ms: z.int().min(0),
  /** The first KiB of the receiver's answer, as text. */
  response_body: z.string().nullable(),
  /** An attempt asked for through the API (retry, test) rather than by the schedule. */
  manual: z.boolean(),
});

export const webhookDeliverySchema = z
  .object({
    id: z.string(),
    endpoint_id: z.string(),
    /** The event's id: the webhook-id header of every attempt. */
    event_id: z.string(),
    event_type: z.string(),
    status: z.enum(WEBHOOK_DELIVERY_STATUSES),
    /**
     * The exact body every attempt sends (docs/WEBHOOKS.md, "Debugging a receiver"); null for a caller
     * that may read webhooks but not events (a JWT with tenant:read, without events:read or tenant:write).
     */
    request_body: z.string().nullable(),
    attempts: z.array(webhookAttemptSchema).describe('Every attempt, oldest first'),
    next_attempt_at: timestamp.nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDeliveryView = z.infer<typeof webhookDeliverySchema>;

/** The windows of an endpoint's success rate (docs/WEBHOOKS.md, "Debugging a receiver"). */
export const WEBHOOK_STATS_WINDOWS = { last_24h: 24 * 3_600_000, last_7d: 7 * 24 * 3_600_000 } as const;

const statsWindowSchema = z.object({
  since: timestamp,
  /** Attempts made in the window, by the schedule and by hand. */
  attempts: z.int().min(0),
  /** Of those, the ones the receiver answered with a 2xx. */
  succeeded: z.int().min(0),
  failed: z.int().min(0),
  /** succeeded / attempts, 0 … 1 to four decimals; null when no attempt was made. */
  success_rate: z.number().min(0).max(1).nullable(),
});

export const webhookEndpointStatsSchema = z
  .object({
    endpoint_id: z.string(),
    as_of: timestamp,
    last_24h: statsWindowSchema,
    last_7d: statsWindowSchema,
  })
  .meta({ id: 'WebhookEndpointStats' });
export type WebhookEndpointStatsView = z.infer<typeof webhookEndpointStatsSchema>;

/** At most this many deliveries are put back by one replay call; `has_more` asks for another. */
export const WEBHOOK_REPLAY_MAX = 500;

export const replayWebhookDeliveriesBody = z.strictObject({
  since: z.iso
    .datetime({ offset: true })
    .describe('Replay the FAILED deliveries created at or after this time'),
  dry_run: z
    .boolean()
    .optional()
    .describe('Only count what would be replayed (the dashboard asks this before its confirmation)'),
});
export type ReplayWebhookDeliveriesBody = z.output<typeof replayWebhookDeliveriesBody>;

export const webhookReplaySchema = z
  .object({
    endpoint_id: z.string(),
    since: timestamp,
    dry_run: z.boolean(),
    /** Deliveries put back to PENDING (or, in a dry run, that would be), at most WEBHOOK_REPLAY_MAX. */
    replayed: z.int().min(0),
    /** More FAILED deliveries since `since` remain: call again. */
    has_more: z.boolean(),
  })
  .meta({ id: 'WebhookReplay' });
export type WebhookReplayView = z.infer<typeof webhookReplaySchema>;

/** A JWT caller's alternatives for reading webhook endpoints: any of them suffices. */
const READ = ['tenants:admin', 'tenant:write', 'tenant:read'] as const;
/** A JWT caller's alternatives for changing them. */
const WRITE = ['tenants:admin', 'tenant:write'] as const;
const shared = { service: 'audit', auth: 'tenant', scope: 'tenants:admin', tags: ['webhooks'] } as const;
const reads = routeGroup({ ...shared, permissions: READ });
const writes = routeGroup({ ...shared, permissions: WRITE });

export const webhookRoutes = {
  createWebhookEndpoint: writes.post('/v1/webhook-endpoints', {
    summary: 'Create a webhook endpoint',
    description:
      'Scope tenants:admin (JWT: tenant:write). The URL must be https (http://127.0.0.1 or localhost only when the ' +
      `deployment sets WEBHOOKS_ALLOW_LOOPBACK) and its host must not resolve to a loopback, private, link-local, ` +
      `CGNAT, multicast or unspecified address. At most ${MAX_WEBHOOK_ENDPOINTS} endpoints per tenant. ` +
      'The secret is shown in this answer only. Emits WEBHOOK_ENDPOINT_CREATED.',
    request: { body: createWebhookEndpointBody },
    responses: { 201: { description: 'The endpoint with its secret', schema: createdWebhookEndpointSchema } },
    secrets: ['secret'],
    errors: {
      400: 'Invalid url (scheme, credentials, fragment, a forbidden address) or event types',
      409: `The tenant already has ${MAX_WEBHOOK_ENDPOINTS} endpoints`,
      503: 'RabbitMQ could not be reached to route the event types to the webhook queue; nothing was stored',
    },
  }),
  listWebhookEndpoints: reads.get('/v1/webhook-endpoints', {
    summary: 'List webhook endpoints, newest first',
    ...listing(listWebhookEndpointsQuery, 'A page of endpoints', webhookEndpointSchema),
  }),
  getWebhookEndpoint: reads.get('/v1/webhook-endpoints/:id', {
    summary: 'Get a webhook endpoint',
    ...oneOrNotFound('The endpoint', webhookEndpointSchema, 'No such endpoint for this tenant'),
  }),
  updateWebhookEndpoint: writes.patch('/v1/webhook-endpoints/:id', {
    summary: 'Change the url, event types, description or status (ENABLED, DISABLED) of an endpoint',
    description:
      'Enabling an endpoint clears its failing state. Deliveries already pending go to the new url. Emits WEBHOOK_ENDPOINT_UPDATED.',
    request: { body: updateWebhookEndpointBody },
    responses: { 200: { description: 'The endpoint', schema: webhookEndpointSchema } },
    errors: {
      400: 'Invalid url or event types, or nothing to change',
      404: 'No such endpoint for this tenant',
      503: 'RabbitMQ could not be reached to route new event types to the webhook queue; nothing was changed',
    },
  }),
  deleteWebhookEndpoint: writes.delete('/v1/webhook-endpoints/:id', {
    summary: 'Delete an endpoint; its pending deliveries are not attempted again',
    description: 'Emits WEBHOOK_ENDPOINT_DELETED.',
    ...oneOrNotFound('Deleted', deletedWebhookEndpointSchema, 'No such endpoint for this tenant'),
  }),
  rotateWebhookSecret: writes.post('/v1/webhook-endpoints/:id/rotate-secret', {
    summary: 'Issue a new signing secret; the previous one keeps signing alongside it for 24 hours',
    description:
      'During those 24 hours every delivery carries two signatures (space-separated in webhook-signature), so ' +
      'receivers can switch secrets at their pace. Emits WEBHOOK_ENDPOINT_UPDATED.',
    responses: {
      200: { description: 'The endpoint with its new secret', schema: rotatedWebhookSecretSchema },
    },
    secrets: ['secret'],
    errors: { 404: 'No such endpoint for this tenant' },
  }),
  sendWebhookTest: writes.post('/v1/webhook-endpoints/:id/test', {
    summary: `Send a ${WEBHOOK_TEST_EVENT_TYPE} event to the endpoint now`,
    description:
      'The first attempt is made before the answer; a failed one is retried on the usual schedule. The event is not part of the audit trail.',
    responses: { 201: { description: 'The delivery with its first attempt', schema: webhookDeliverySchema } },
    errors: { 404: 'No such endpoint for this tenant', 409: 'The endpoint is disabled' },
  }),
  listWebhookDeliveries: reads.get('/v1/webhook-endpoints/:id/deliveries', {
    summary:
      'List the deliveries to an endpoint, newest first (or oldest first: order=asc), each with its attempts',
    ...listing(listWebhookDeliveriesQuery, 'A page of deliveries', webhookDeliverySchema),
    errors: { 404: 'No such endpoint for this tenant' },
  }),
  retryWebhookDelivery: writes.post('/v1/webhook-endpoints/:id/deliveries/:deliveryId/retry', {
    summary: 'Attempt a delivery again now (same webhook-id)',
    description:
      'Any delivery, FAILED and SUCCEEDED ones included. The attempt is made before the answer; a PENDING delivery keeps its schedule if it fails.',
    responses: { 200: { description: 'The delivery with the new attempt', schema: webhookDeliverySchema } },
    errors: {
      404: 'No such endpoint or delivery for this tenant',
      409: 'The endpoint is disabled, or the delivery is being attempted right now',
    },
  }),
  getWebhookEndpointStats: reads.get('/v1/webhook-endpoints/:id/stats', {
    summary: 'The success rate of the attempts to an endpoint over the last 24 hours and 7 days',
    description:
      'Counts the attempts recorded with its deliveries (scheduled and by hand) whose time falls in each window; ' +
      'succeeded is a 2xx answer. success_rate is null when no attempt was made.',
    ...oneOrNotFound('The counts', webhookEndpointStatsSchema, 'No such endpoint for this tenant'),
  }),
  replayWebhookDeliveries: writes.post('/v1/webhook-endpoints/:id/replay', {
    summary: 'Send the FAILED deliveries created since a time again, on a fresh retry schedule',
    description:
      `At most ${WEBHOOK_REPLAY_MAX} per call (oldest first; has_more says to call again). Each goes back to PENDING, ` +
      'due now, with the same webhook-id; the worker sends them at its usual concurrency. A delivery already ' +
      'PENDING or being attempted is left alone, so a repeated call replays nothing twice. dry_run only counts.',
    request: { body: replayWebhookDeliveriesBody },
    responses: { 200: { description: 'How many were replayed', schema: webhookReplaySchema } },
    errors: {
      400: 'since is not an ISO 8601 time, or is in the future',
      404: 'No such endpoint for this tenant',
      409: 'The endpoint is disabled',
    },
  }),
} as const;
