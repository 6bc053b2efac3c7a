import { actorSchema } from '@mandate/shared/core';
import { defineRoutes } from '@mandate/shared/contract';
import { z } from 'zod';
import { API_KEY_SCOPES, API_KEY_STATUSES, ROLES, ROLE_ASSIGNMENT_STATUSES } from './wire';
import { tenantConfigRoutes, timestamp } from './common';

// Access baselines (drift monitoring, docs/DASHBOARD.md): schemas and routes.

/** Nothing to send: the server snapshots the tenant's access configuration as it is now. */
export const putAccessBaselineBody = z.strictObject({});

export const accessSnapshotSchema = z.object({
  api_keys: z
    .array(
      z.object({
        key_id: z.string(),
        name: z.string(),
        scopes: z.array(z.enum(API_KEY_SCOPES)),
        status: z.enum(API_KEY_STATUSES),
      }),
    )
    .describe('Every key of the tenant, revoked ones included, newest first'),
  role_assignments: z
    .array(
      z.object({
        id: z.string(),
        subject_id: z.string(),
        roles: z.array(z.enum(ROLES)),
        status: z.enum(ROLE_ASSIGNMENT_STATUSES),
      }),
    )
    .describe('Every role assignment of the tenant, revoked ones included, newest first'),
  widget_allowed_origins: z.array(z.string()),
  truncated: z
    .boolean()
    .describe('True when the tenant had more keys or assignments than a snapshot holds (1000 each)'),
});

export const accessBaselineSchema = z
  .object({
    tenant_id: z.string(),
    saved_at: timestamp,
    saved_by: actorSchema.describe('Who saved it: the API key or the signed-in subject'),
    snapshot: accessSnapshotSchema,
  })
  .meta({ id: 'AccessBaseline' });

/** GET's answer: like the widget configuration, a tenant that never saved one reads nulls (never a 404). */
export const accessBaselineOrNoneSchema = z
  .object({
    tenant_id: z.string(),
    saved_at: timestamp.nullable().describe('null until the first save'),
    saved_by: actorSchema.nullable().describe('null until the first save'),
    snapshot: accessSnapshotSchema.nullable().describe('null until the first save'),
  })
  .meta({ id: 'AccessBaselineOrNone' });

const baselines = tenantConfigRoutes('tenants');

export const accessBaselineRoutes = defineRoutes({
  getAccessBaseline: baselines.reads.get('/v1/tenants/:tenantId/access-baseline', {
    summary: "The tenant's saved access baseline (drift monitoring)",
    responses: {
      200: {
        description: 'The baseline; saved_at, saved_by and snapshot are null until the first save',
        schema: accessBaselineOrNoneSchema,
      },
    },
  }),
  putAccessBaseline: baselines.writes.put('/v1/tenants/:tenantId/access-baseline', {
    summary:
      "Save the tenant's access configuration as it is now as the baseline (replaces the previous one)",
    request: { body: putAccessBaselineBody, bodyRequired: false },
    responses: { 200: { description: 'The saved baseline', schema: accessBaselineSchema } },
    errors: { 409: 'A baseline saved at the same moment won; retry the request' },
  }),
});
