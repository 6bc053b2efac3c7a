import { buildOpenApiDocument, type OpenApiContribution } from '@mandate/shared';
import { openApi as mandatesOpenApi } from '@mandate/mandates/src/http/schemas';
import { openApi as verifyOpenApi } from '@mandate/verify/src/http/schemas';
import { openApi as identityOpenApi } from '@mandate/identity/src/http/schemas';
import { openApi as auditOpenApi } from '@mandate/audit/src/http/schemas';

/**
 * The public document: every service's routes, generated from the very zod schemas those services
 * validate requests with. The gateway only assembles it.
 */
export const serviceContributions: OpenApiContribution[] = [
  mandatesOpenApi,
  verifyOpenApi,
  identityOpenApi,
  auditOpenApi,
];

export const buildPublicOpenApi = () => buildOpenApiDocument(serviceContributions);
