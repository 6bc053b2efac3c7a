import { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import { listen, type RunningServer } from '../src/http';

/**
 * listen() makes an express app's requests and answers with express's prototypes, so express's own
 * setPrototypeOf on every request changes nothing (docs/DECISIONS.md, "What may outlive a request").
 */
describe('listen: the prototypes of requests and answers', () => {
  let running: RunningServer | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  it('when an express app is served, then its requests and answers are made with its own prototypes, and its routes work', async () => {
    const app = express();
    app.get('/hello', (req, res) => res.status(201).json({ path: req.path, q: req.query.q }));
    running = await listen(app, 0);
    // Before express sees them: as node made them.
    const made: boolean[] = [];
    running.server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      made.push(
        Object.getPrototypeOf(req) === app.request,
        Object.getPrototypeOf(res) === app.response,
        req instanceof IncomingMessage && res instanceof ServerResponse,
      );
    });
    const answer = await fetch(`${running.url}/hello?q=1`);
    expect(answer.status).toBe(201);
    expect(await answer.json()).toEqual({ path: '/hello', q: '1' });
    expect(made).toEqual([true, true, true]);
  });

  it('when a plain handler is served, then its requests and answers are node’s own', async () => {
    const protos: unknown[] = [];
    running = await listen((_req: IncomingMessage, res: ServerResponse) => res.end('ok'), 0);
    running.server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      protos.push(Object.getPrototypeOf(req), Object.getPrototypeOf(res));
    });
    expect(await (await fetch(running.url)).text()).toBe('ok');
    expect(protos).toEqual([IncomingMessage.prototype, ServerResponse.prototype]);
  });
});
