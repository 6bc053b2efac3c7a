/**
 * The one import of @peculiar/x509: it needs a Reflect polyfill loaded first (tsyringe inside it)
 * and Node's WebCrypto set explicitly (it otherwise looks for a browser global).
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
