import { createApp } from './app';
import { configSchema } from './config';
import { wire } from './wiring';

/** What starts mandates: its own process (main.ts) and the embedded launcher (`npm start`) alike. */
export const service = { name: 'mandates', configSchema: configSchema, wire, createApp, hasStore: true };
