import { defineRoutes } from '@mandate/shared/contract';
import { z } from 'zod';
import {
  COLOR_PATTERN,
  LOCALE_PATTERN,
  MAX_ALLOWED_ORIGINS,
  isHttpsOrigin,
  isHttpsUrl,
  normalizeHttpsOrigin,
  normalizeHttpsUrl,
} from './wire';
import { tenantConfigRoutes, timestamp } from './common';

// The widget configuration: schemas and routes.

export const widgetConfigBody = z.strictObject({
  allowed_origins: z
    .array(
      z
        .string()
        .max(300)
        .refine(isHttpsOrigin, {
          message: 'must be an https origin such as https://shop.example.com (no path, no wildcard)',
        })
        // Stored as the browser's Origin header spells it, so comparisons are exact.
        .overwrite((origin) => normalizeHttpsOrigin(origin) ?? origin),
    )
    .max(MAX_ALLOWED_ORIGINS),
  theme: z
    .strictObject({
      primary_color: z
        .string()
        .regex(COLOR_PATTERN, { message: 'must be a hex colour such as #1a2b3c' })
        .optional(),
      logo_url: z
        .string()
        .max(2048)
        .refine(isHttpsUrl, { message: 'must be an https URL without credentials' })
        // Stored as the parser's href: a quote or space can never break out of an attribute.
        .overwrite((url) => normalizeHttpsUrl(url) ?? url)
        .optional(),
    })
    .default({}),
  locale: z
    .string()
    .regex(LOCALE_PATTERN, { message: 'must be a BCP 47 tag such as en or de-CH' })
    .nullable()
    .default(null),
});

export const widgetConfigSchema = z
  .object({
    allowed_origins: z.array(z.string()),
    theme: z.object({ primary_color: z.string().optional(), logo_url: z.string().optional() }),
    locale: z.string().nullable(),
    updated_at: timestamp.nullable().describe('null until the configuration is first saved'),
  })
  .meta({ id: 'WidgetConfig' });

// Reading is a tenant:read like every other tenant configuration read (the dashboard's table).
const widget = tenantConfigRoutes('widget');

export const widgetRoutes = defineRoutes({
  getWidgetConfig: widget.reads.get('/v1/tenants/:tenantId/widget-config', {
    summary: "The tenant's widget configuration (defaults until saved)",
    responses: { 200: { description: 'The configuration', schema: widgetConfigSchema } },
  }),
  putWidgetConfig: widget.writes.put('/v1/tenants/:tenantId/widget-config', {
    summary: "Replace the tenant's widget configuration",
    request: { body: widgetConfigBody },
    responses: { 200: { description: 'The saved configuration', schema: widgetConfigSchema } },
  }),
});
