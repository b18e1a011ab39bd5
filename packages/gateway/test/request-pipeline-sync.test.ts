import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RequestLog } from '../src/log/request-log.js';
import type { ProxyContext } from '../src/server/proxy-context.js';
import { handleRequest } from '../src/server/request-pipeline.js';
import {
  client,
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
let listener: Server | undefined;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});
afterEach(async () => {
  await new Promise((r) => listener?.close(r) ?? r(undefined));
  listener = undefined;
  await running?.gateway.close();
  running = undefined;
});

/**
 * The gateway's request handler behind a listener of the test's own, which records whether each call returned a
 * promise: the common path (an allowed or denied request the memory store decides) must not make one.
 */
async function serve(yaml: string): Promise<{ url: string; promises: boolean[] }> {
  running = await startGateway(join(tmp.dir, 'gw.yaml'), { yaml, overrides: { upstream: upstream.url } });
  const host = running.gateway;
  const ctx: ProxyContext = {
    host,
    now: () => running?.nowMs ?? 0,
    draining: false,
    acceptedWhileDraining: () => false,
    begin: () => {},
    end: () => {},
    keepUpgraded: () => {},
    requestLog: new RequestLog(host.logger),
  };
  const promises: boolean[] = [];
  listener = createServer((req: IncomingMessage, res: ServerResponse) => {
    const r = handleRequest(ctx, req, res);
    promises.push(r !== undefined);
  });
  await new Promise<void>((r) => listener?.listen(0, '127.0.0.1', r));
  const port = (listener.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, promises };
}

const TIERS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: 1 }
`;

describe('the request handler on the memory store', () => {
  it('proxies an allowed request and answers a denied one without a promise', async () => {
    const { url, promises } = await serve(TIERS);
    const allowed = await send(agent, `${url}/api/items`);
    expect(allowed.status).toBe(200);
    const denied = await send(agent, `${url}/api/items`);
    expect(denied.status).toBe(429);
    expect(promises).toEqual([false, false]);
  });

  it('returns a promise for a health answer, and answers it', async () => {
    const { url, promises } = await serve(TIERS);
    const health = await send(agent, `${url}/health`);
    expect(health.status).toBe(200);
    expect(promises).toEqual([true]);
  });
});
