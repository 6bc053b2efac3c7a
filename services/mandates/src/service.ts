import { createApp } from './app';
import { configSchema, separateProcessConfigSchema, deploymentNeeds } from './config';
import { wire } from './wiring';

/** What starts mandates: its own process (main.ts) and the embedded launcher (`npm start`) alike. */
export const service = {
  name: 'mandates',
  configSchema,
  separateProcessConfigSchema,
  wire,
  createApp,
  hasStore: true,
  deployment: deploymentNeeds,
};
