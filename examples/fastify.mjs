// Fastify 5 with Sluice, which needs `npm install fastify fastify-plugin` (sluice/fastify registers through it).
// Run `node examples/fastify.mjs`, then `curl -i http://127.0.0.1:3000/api/hello` six times.
import Fastify from 'fastify';
import { sluiceFastify } from 'sluice/fastify';
import { createLimits, isMain } from './limits.mjs';

/** Starts the app; resolves with its URL and a close function. */
export async function start(port = 3000) {
  const app = Fastify();
  await app.register(sluiceFastify, { limiter: createLimits() });
  app.get('/api/hello', async () => ({ hello: 'world' }));
  const url = await app.listen({ port, host: '127.0.0.1' });
  return { url, close: () => app.close() };
}

if (isMain(import.meta.url))
  console.log(`listening on ${(await start(Number(process.env.PORT ?? 3000))).url}`);
