import { createApp } from './app';
import { gatewayConfigSchema, gatewayDeploymentNeeds } from './config';
import { wire } from './wiring';

/** What starts gateway: its own process (main.ts) and the embedded launcher (`npm start`) alike. */
export const service = {
  name: 'gateway',
  configSchema: gatewayConfigSchema,
  wire,
  createApp,
  deployment: gatewayDeploymentNeeds,
};
