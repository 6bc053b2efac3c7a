import { createApp } from './app';
import { configSchema, deploymentNeeds } from './config';
import { wire } from './wiring';

/** What starts identity: its own process (main.ts) and the embedded launcher (`npm start`) alike. */
export const service = {
  name: 'identity',
  configSchema: configSchema,
  wire,
  createApp,
  hasStore: true,
  deployment: deploymentNeeds,
};
