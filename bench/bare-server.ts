/**
 * The baselines of `npm run bench:verify`: a bare express app and a raw node:http server that
 * parse a verify body and answer a verify-shaped JSON, nothing else. Run as its own process:
 * `tsx bench/bare-server.ts express|http` prints `listening <port>`.
 */
import express from 'express';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const answer = (mandateId: unknown) =>
  JSON.stringify({
    decision: 'ALLOW',
    reason: 'OK',
    mandate_id: mandateId,
    mandate_state: 'ACTIVE',
    mandate_version: 1,
    decision_id: 'dec_00000000000000000000000000',
  });

const kind = process.argv[2];
let server;
if (kind === 'express') {
  const app = express();
  app.use(express.json());
  app.post('/v1/verify', (req, res) => {
    res.type('application/json').send(answer(req.body.mandate_id));
  });
  server = createServer(app);
} else if (kind === 'http') {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { mandate_id: string };
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end(answer(body.mandate_id));
    });
  });
} else {
  throw new Error('usage: bare-server.ts express|http');
}
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
