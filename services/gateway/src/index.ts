/**
 * The gateway's package entry: its public surface — every route contract it serves (the services'
 * and its own) and the OpenAPI document built from them. The packages (the client generator) and
 * the tests know the gateway by this; how it runs is `@mandate/gateway/service`.
 */
export * from './routes/table';
export { buildPublicOpenApi } from './openapi';
