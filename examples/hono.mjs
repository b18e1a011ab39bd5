// Hono on Node.js with Sluice: `node examples/hono.mjs`, then `curl -i http://127.0.0.1:3000/api/hello` six times.
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { rateLimit } from 'sluice/hono';
import { createLimits, isMain } from './limits.mjs';

/** Starts the app; resolves with its URL and a close function. */
export async function start(port = 3000) {
  const app = new Hono();
  app.use(rateLimit(createLimits()));
  app.get('/api/hello', (c) => c.json({ hello: 'world' }));
  const server = await new Promise((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, () => {
      s.off('error', reject);
      resolve(s);
    });
    // A listen error (EADDRINUSE: the port is taken) rejects, so `node` prints it and exits.
    s.once('error', reject);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

if (isMain(import.meta.url))
  console.log(`listening on ${(await start(Number(process.env.PORT ?? 3000))).url}`);
