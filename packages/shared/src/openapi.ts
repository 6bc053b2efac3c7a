import { OpenAPIRegistry, OpenApiGeneratorV31, extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { errorEnvelopeSchema } from './errors';

// Gives every zod schema `.openapi()`, which the registry relies on for named components.
extendZodWithOpenApi(z);

export { OpenAPIRegistry };

/** Each service contributes its routes' zod schemas; the gateway assembles one document. */
export type OpenApiContribution = (registry: OpenAPIRegistry) => void;

export const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: errorEnvelopeSchema } },
});

export function buildOpenApiDocument(contributions: OpenApiContribution[]) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'apiKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'Bearer <tenantId>:<apiKey>, or a JWT from a configured issuer',
  });
  for (const contribute of contributions) contribute(registry);
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: { title: 'Mandate service', version: '1.0.0' },
    servers: [{ url: '/' }],
    security: [{ apiKey: [] }],
  });
}
