import { createApp } from './app';
import { configSchema, deploymentNeeds } from './config';
import { wire } from './wiring';

/** What starts verify: its own process (main.ts) and the embedded launcher (`npm start`) alike. */
export const service = {
  name: 'verify',
  configSchema: configSchema,
  wire,
  createApp,
  deployment: deploymentNeeds,
};
