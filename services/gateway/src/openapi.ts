import { buildOpenApiDocument } from '@mandate/shared/contract';
import { CONTRACTS } from './routes/table';

/** The public document, built from the services' contracts (the same the route table is made of). */
export const buildPublicOpenApi = () => buildOpenApiDocument(CONTRACTS);
