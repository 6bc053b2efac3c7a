import { runService } from '@mandate/shared';
import { createApp } from './app';
import { configSchema } from './config';
import { wire } from './wiring';

/** The only file that connects and listens. */
runService({ name: 'identity', configSchema: configSchema, wire, createApp, hasStore: true });
