/**
 * A cost read from the JSON answer cannot be read from a compressed one: a client that asks for gzip must not
 * pay only its reservation. The gateway asks the upstream for the answer as is on a route that reads it, and
 * leaves the client's Accept-Encoding alone on every other route.
 */

import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { client, send, startGateway, startUpstream, type TestGateway, tempDir } from './support.js';

const CONFIG = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 6000, burstLimit: 1000 }
  endpoints:
    - pattern: /v1/chat/completions
      name: llm-tokens
      limit: 10000
      window: 60s
      cost:
        json: usage.total_tokens
        reserve: { field: max_tokens, default: 100, maxBytes: 1kb }
    - pattern: /files/*
      name: download-bytes
      limit: 20000000
      window: 60s
      cost: { bytes: response }
`;

async function units(t: TestGateway, policy: string): Promise<number> {
  const text = await t.gateway.metrics.registry.metrics();
  const m = new RegExp(`sluice_units_total\\{policy="${policy}",unit="[a-z]+"\\} (\\d+)`).exec(text);
  return m === null ? 0 : Number(m[1]);
}

async function untilUnits(t: TestGateway, policy: string, n: number): Promise<void> {
  for (let i = 0; i < 2000 && (await units(t, policy)) !== n; i++)
    await new Promise((res) => setImmediate(res));
  expect(await units(t, policy)).toBe(n);
}

describe('a JSON cost and a client asking for a compressed answer', () => {
  const { dir, cleanup } = tempDir();
  const agent = client();
  afterAll(async () => {
    await agent.close();
    cleanup();
  });

  it('charges the usage, not the reservation: the upstream is asked for the answer uncompressed', async () => {
    const upstream = await startUpstream();
    const seen: (string | undefined)[] = [];
    // Compresses whenever asked, as an upstream behind a compression middleware does.
    upstream.handler = (req, res) => {
      req.resume();
      seen.push(req.headers['accept-encoding']);
      const body = JSON.stringify({ usage: { total_tokens: 5000 } });
      if (/gzip/.test(req.headers['accept-encoding'] ?? '')) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        res.end(gzipSync(body));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      }
    };
    const t = await startGateway(join(dir, 'enc.yaml'), {
      yaml: `${CONFIG}upstream:\n  url: ${upstream.url}\n`,
    });
    try {
      const url = t.gateway.url;
      const a = await send(agent, `${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' },
        body: '{"max_tokens":1}',
      });
      expect(a.status).toBe(200);
      await untilUnits(t, 'llm-tokens', 5000);
      const b = await send(agent, `${url}/files/a`, { headers: { 'accept-encoding': 'gzip' } });
      expect(b.status).toBe(200);
      // Only the route whose cost is read from the body changes what the upstream is asked.
      expect(seen).toEqual(['identity', 'gzip']);
    } finally {
      await t.gateway.close();
      await upstream.close();
    }
  });
});
