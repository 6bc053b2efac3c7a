import { runService } from '@mandate/shared';
import { createApp } from './app';
import { auditConfigSchema } from './config';
import { wire } from './wiring';

/** The only file that connects and listens. */
runService({ name: 'audit', configSchema: auditConfigSchema, wire, createApp, hasStore: true });
