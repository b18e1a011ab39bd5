// node:http with Sluice: `node examples/node-http.mjs`, then `curl -i http://127.0.0.1:3000/api/hello` six times.
import { createServer } from 'node:http';
import { withRateLimit } from 'sluice/node';
import { createLimits, isMain } from './limits.mjs';

/** Starts the server; resolves with its URL and a close function. */
export async function start(port = 3000) {
  const server = createServer(
    withRateLimit(createLimits(), (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ hello: 'world' }));
    }),
  );
  // A listen error (EADDRINUSE: the port is taken) rejects, so `node` prints it and exits.
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

if (isMain(import.meta.url))
  console.log(`listening on ${(await start(Number(process.env.PORT ?? 3000))).url}`);
