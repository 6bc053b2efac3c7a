/**
 * @mandate/shared/contract (layer 6 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * Route contracts, pagination and the OpenAPI document built from them. Imports the layers below.
 */
export * from './contract';
export * from './pagination';
export * from './openapi';
export * from './openapi-examples';
