import { createApp } from './app';
import { auditConfigSchema, auditDeploymentNeeds } from './config';
import { wire } from './wiring';

/** What starts audit: its own process (main.ts) and the embedded launcher (`npm start`) alike. */
export const service = {
  name: 'audit',
  configSchema: auditConfigSchema,
  wire,
  createApp,
  hasStore: true,
  deployment: auditDeploymentNeeds,
};
