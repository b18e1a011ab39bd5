import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  client,
  makeCertificates,
  send,
  startGateway,
  startUpstream,
  type TestUpstream,
  tempDir,
} from './support.js';

const tmp = tempDir();
let upstream: TestUpstream;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
  tmp.cleanup();
});

// A TLS connection is known to Node.js's HTTP server only once its handshake is done: closing every connection
// at the end of the drain left out the sockets still in a handshake, and the gateway waited for them (up to the
// TLS handshake timeout, 120 s) before it stopped.
it('over TLS, a connection that never finishes its handshake does not hold the stop', {
  timeout: 30_000,
}, async () => {
  const certs = makeCertificates(tmp.dir);
  const t = await startGateway(join(tmp.dir, 'hs.yaml'), {
    yaml: `server:
  tls: { cert: server.pem, key: server.key }
rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 50 }
`,
    overrides: { upstream: upstream.url },
  });
  const { port } = new URL(t.gateway.url as string);
  const silent: Socket = connect(Number(port), '127.0.0.1');
  silent.on('error', () => undefined);
  await once(silent, 'connect');
  // Served after the silent connection was accepted: the listener accepts in arrival order.
  const agent = client({ ca: readFileSync(certs['ca.pem'] as string) });
  expect((await send(agent, `${t.gateway.url}/health`)).status).toBe(200);
  await agent.close();
  const closed = once(silent, 'close');
  await t.gateway.close();
  await closed;
  expect(silent.destroyed).toBe(true);
});
