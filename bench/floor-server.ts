/**
 * "The floor" of `npm run bench:verify` (docs/PERFORMANCE.md): the stack's shape with none of its
 * work — a bare express "gateway" that checks that an Authorization header exists and forwards the
 * body over a keep-alive undici Pool to a bare express "verify", which reads one Redis key and
 * answers JSON. Two node processes and Redis, the same hops as the stack. Each runs as its own
 * process and prints `listening <port>`:
 *   tsx bench/floor-server.ts verify <redis-url> <key>
 *   tsx bench/floor-server.ts gateway <verify-url>
 */
import express from 'express';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Redis from 'ioredis';
import { Pool } from 'undici';

const [kind, target, key] = process.argv.slice(2);
let server: Server;
let close = async () => {};
if (kind === 'verify' && target && key) {
  const redis = new Redis(target, { lazyConnect: false });
  const app = express();
  app.use(express.json());
  app.post('/v1/verify', async (req, res) => {
    const state = await redis.get(key);
    res.json({
      decision: state === 'ACTIVE' ? 'ALLOW' : 'DENY',
      reason: 'OK',
      mandate_id: req.body.mandate_id,
      mandate_state: state,
      mandate_version: 1,
      decision_id: 'dec_00000000000000000000000000',
    });
  });
  server = createServer(app);
  close = async () => void redis.disconnect();
} else if (kind === 'gateway' && target) {
  const pool = new Pool(target, { connections: 64, pipelining: 1, keepAliveTimeout: 30_000 });
  const app = express();
  app.use(express.raw({ type: 'application/json' }));
  app.post('/v1/verify', async (req, res) => {
    if (!req.headers.authorization) {
      res.status(401).json({ error: 'UNAUTHORIZED', message: 'Invalid or missing API key' });
      return;
    }
    const answer = await pool.request({
      method: 'POST',
      path: '/v1/verify',
      headers: { 'content-type': 'application/json' },
      body: req.body as Buffer,
    });
    res
      .status(answer.statusCode)
      .type('application/json')
      .send(Buffer.from(await answer.body.arrayBuffer()));
  });
  server = createServer(app);
  close = () => pool.close();
} else {
  throw new Error('usage: floor-server.ts verify <redis-url> <key> | gateway <verify-url>');
}
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => void close().finally(() => process.exit(0))));
