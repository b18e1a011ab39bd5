import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  echo,
  rawStatus,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let running: TestGateway | undefined;

const config = (logging: string) => `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 2 }
logging: ${logging}
`;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});
afterEach(async () => {
  upstream.handler = echo;
  await running?.gateway.close();
  running = undefined;
});

async function start(yaml: string): Promise<TestGateway> {
  running = await startGateway(join(tmp.dir, 'log.yaml'), { yaml, overrides: { upstream: upstream.url } });
  return running;
}

const requestLines = (t: TestGateway) => t.logs.lines.filter((l) => l.msg === 'request');

describe('logging.requests', () => {
  it('denied: a denial gets its line, a forwarded request none; a reload changes it for the next request', async () => {
    const t = await start(config('{ level: info, requests: denied }'));
    const url = `${t.gateway.url}/api/a`;
    const ids = ['ok-1', 'ok-2', 'limited-3'];
    const got: number[] = [];
    for (const id of ids) got.push((await send(agent, url, { headers: { 'x-request-id': id } })).status);
    expect(got).toEqual([200, 200, 429]);
    expect(requestLines(t)).toEqual([
      expect.objectContaining({ level: 30, service: 'sluice', reqId: 'limited-3', status: 429 }),
    ]);
    expect(requestLines(t)[0].outcome).toMatch(/limited/);
    writeFileSync(t.file, config('{ level: info, requests: all }'));
    expect((await t.gateway.reload()).ok).toBe(true);
    await send(agent, `${t.gateway.url}/health`, { headers: { 'x-request-id': 'health-4' } });
    expect(requestLines(t).map((l) => l.reqId)).toEqual(['limited-3', 'health-4']);
  });

  it('denied: a refused WebSocket upgrade gets its line, marked as an upgrade', async () => {
    const t = await start(config('{ level: info, requests: denied }'));
    const port = Number(new URL(t.gateway.url).port);
    const upgrade = (id: string) =>
      rawStatus(port, 'GET', '/ws', [
        ['connection', 'upgrade'],
        ['upgrade', 'websocket'],
        ['sec-websocket-version', '13'],
        ['sec-websocket-key', 'dGhlIHNhbXBsZSBub25jZQ=='],
        ['x-request-id', id],
      ]);
    // Two answered by the upstream, the third refused by the tier's burst of 2.
    await upgrade('up-1');
    await upgrade('up-2');
    expect(await upgrade('up-3')).toBe(429);
    const lines = requestLines(t);
    expect(lines.find((l) => l.reqId === 'up-3')).toMatchObject({ status: 429, upgrade: true });
    // A served upgrade is routine: under `denied` it has no line.
    for (const l of lines) expect(l.outcome).not.toBe('proxied');
  });

  it('none: no request line at level info, while the other info lines stay', async () => {
    const t = await start(config('{ level: info, requests: none }'));
    expect((await send(agent, `${t.gateway.url}/api/a`)).status).toBe(200);
    expect(requestLines(t)).toEqual([]);
    expect(t.logs.lines.some((l) => l.level === 30)).toBe(true);
  });
});
