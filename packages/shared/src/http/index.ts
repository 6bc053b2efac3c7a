/**
 * @mandate/shared/http (layer 7 of 8, docs/SERVICE-CONVENTIONS.md, "The shared package's layers").
 * Serving and calling HTTP: the request pipeline, express apps, servers, clients, contract routes.
 * Imports the layers below.
 */
export * from './http';
export * from './pipeline';
export * from './plain-parser';
export * from './server';
export * from './http-client';
export * from './outbound';
export * from './contract-route';
export * from './contract-client';
