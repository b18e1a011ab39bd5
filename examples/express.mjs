// Express 5 with Sluice: `node examples/express.mjs`, then `curl -i http://127.0.0.1:3000/api/hello` six times.
import express from 'express';
import { rateLimit } from 'sluice/express';
import { createLimits, isMain } from './limits.mjs';

/** Starts the app; resolves with its URL and a close function. */
export async function start(port = 3000) {
  const app = express();
  app.use(rateLimit(createLimits()));
  app.get('/api/hello', (_req, res) => res.json({ hello: 'world' }));
  // Express 5 hands a listen error (EADDRINUSE: the port is taken) to this callback rather than throwing it.
  const server = await new Promise((resolve, reject) => {
    const s = app.listen(port, '127.0.0.1', (error) => (error ? reject(error) : resolve(s)));
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

if (isMain(import.meta.url))
  console.log(`listening on ${(await start(Number(process.env.PORT ?? 3000))).url}`);
