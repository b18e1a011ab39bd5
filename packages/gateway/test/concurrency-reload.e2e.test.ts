import { writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawGet } from './own-connections.js';
import { startGateway, startUpstream, type TestGateway, type TestUpstream, tempDir } from './support.js';

const config = (n: number, url: string) => `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 6000, burstLimit: 1000 }
  endpoints:
    - pattern: /api/reports/*
      name: reports
      concurrent: ${n}
headers:
  mode: draft-11
upstream:
  url: ${url}
`;

/**
 * A reload that changes a concurrency limit keeps the requests in flight counted: the new limit applies to them,
 * and they give their slots back to the same count when they end.
 */
describe('concurrency limits across a reload', () => {
  const { dir, cleanup } = tempDir();
  let upstream: TestUpstream;
  let t: TestGateway;
  const held: ServerResponse[] = [];
  let most = 0;
  let inFlight = 0;

  beforeAll(async () => {
    upstream = await startUpstream();
    upstream.handler = (req: IncomingMessage, res: ServerResponse) => {
      inFlight++;
      most = Math.max(most, inFlight);
      res.on('close', () => inFlight--);
      req.resume();
      held.push(res);
    };
    t = await startGateway(join(dir, 'reload.yaml'), { yaml: config(2, upstream.url) });
  });
  afterAll(async () => {
    for (const res of held.splice(0)) res.end('done');
    await t.gateway.close();
    await upstream.close();
    cleanup();
  });

  const heldCount = async (n: number) => {
    while (held.length < n) await new Promise((r) => setTimeout(r, 5));
  };

  it('2 in flight, concurrent 2 to 3: one more is admitted, not three; the old ones give their slots back', async () => {
    const url = t.gateway.url;
    const first = [rawGet(url, '/api/reports/a'), rawGet(url, '/api/reports/b')];
    await heldCount(2);
    writeFileSync(t.file, config(3, upstream.url));
    expect((await t.gateway.reload()).ok).toBe(true);
    const third = rawGet(url, '/api/reports/c');
    await heldCount(3);
    // Three in flight under a limit of three: the next ones are refused at once.
    expect(await rawGet(url, '/api/reports/c')).toBe(429);
    expect(await rawGet(url, '/api/reports/c')).toBe(429);
    expect(most).toBe(3);
    // The requests admitted before the reload end: their slots come back under the new limit, 3 free at the end.
    for (const res of held.splice(0)) res.end('done');
    expect(await Promise.all([...first, third])).toEqual([200, 200, 200]);
    const again = [0, 1, 2].map(() => rawGet(url, '/api/reports/d'));
    await heldCount(3);
    for (const res of held.splice(0)) res.end('done');
    expect(await Promise.all(again)).toEqual([200, 200, 200]);
  });
});
