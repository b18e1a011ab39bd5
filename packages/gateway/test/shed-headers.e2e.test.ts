import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

/**
 * A request shed by load shedding gives its concurrency slot back: the rate-limit headers of its 503 describe the
 * slots as they are once it is back, as the keys API then shows them.
 */
describe('the headers of a shed request', () => {
  const { dir, cleanup } = tempDir();
  const agent = client();
  let upstream: TestUpstream;
  let t: TestGateway;
  const held: ServerResponse[] = [];

  beforeAll(async () => {
    upstream = await startUpstream();
    upstream.handler = (req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      held.push(res);
    };
    t = await startGateway(join(dir, 'shed-headers.yaml'), {
      yaml: `overload: { maxInFlight: 2, reserve: 0.5 }
rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60000, burstLimit: 1000, concurrentRequests: 3, priority: sheddable }
headers:
  mode: both
upstream:
  url: ${upstream.url}
`,
    });
  });
  afterAll(async () => {
    for (const res of held.splice(0)) res.end('done');
    await t.gateway.close();
    await agent.close();
    await upstream.close();
    cleanup();
  });

  it('count the slot the shed request gave back as free, in RateLimit and in the legacy fields', async () => {
    const first = send(agent, `${t.gateway.url}/x`);
    while (held.length < 1) await new Promise((r) => setTimeout(r, 10));
    const shed = await send(agent, `${t.gateway.url}/x`);
    expect(shed.status).toBe(503);
    // One request in flight holds one slot of three: two are free once the shed request's is back.
    expect(shed.headers.ratelimit).toBe('"free";r=998;t=1, "free.concurrent";r=2');
    // The fewest left is still the slots': two.
    expect(shed.headers['x-ratelimit-remaining']).toBe('2');
    for (const res of held.splice(0)) res.end('done');
    expect((await first).status).toBe(200);
  });
});
