import { runService } from '@mandate/shared';
import { createApp } from './app';
import { gatewayConfigSchema } from './config';
import { wire } from './wiring';

/** The only file that connects and listens. */
runService({ name: 'gateway', configSchema: gatewayConfigSchema, wire, createApp });
