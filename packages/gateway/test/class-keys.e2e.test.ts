import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLASS_CATALOGUES } from '../src/config/class-catalogue.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  statuses,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let running: TestGateway | undefined;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterEach(async () => {
  await running?.gateway.close();
  running = undefined;
});
afterAll(async () => {
  await upstream.close();
  await agent.close();
  tmp.cleanup();
});

/** Every class of the standard catalogue at burst 2, the tier far above it so only the classes deny. */
const YAML = `rateLimiting:
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 1000, burstLimit: 1000 }
  endpoints:
    - { pattern: /hooks/:webhook_id, class: rl.webhook_in }
    - { pattern: /docs/*, class: rl.read }
server:
  trustedProxies: [loopback]
identity:
  headers: {}
ratelimit:
  catalogue: standard
${CLASS_CATALOGUES.standard.map((c) => `  ${c.name}: { per_minute: 1, burst: 2 }\n`).join('')}`;

async function start(): Promise<string> {
  running = await startGateway(join(tmp.dir, 'classes.yaml'), {
    yaml: YAML,
    overrides: { upstream: upstream.url },
  });
  return running.gateway.url;
}

describe('endpoint rules naming a catalogue class are keyed by its key kind', () => {
  it('rl.webhook_in: one bucket per webhook_id of the route, whoever calls', async () => {
    const url = await start();
    const from = (ip: string) => ({ 'x-forwarded-for': ip });
    expect(await statuses(agent, `${url}/hooks/a`, 1, from('203.0.113.1'))).toEqual([200]);
    // Another client IP spends the same webhook's bucket: the route parameter names it, not the caller.
    expect(await statuses(agent, `${url}/hooks/a`, 2, from('203.0.113.2'))).toEqual([200, 429]);
    expect(await statuses(agent, `${url}/hooks/b`, 2, from('203.0.113.2'))).toEqual([200, 200]);
    const denied = await send(agent, `${url}/hooks/a`, { headers: from('203.0.113.3') });
    expect(denied.status).toBe(429);
    expect(denied.headers['ratelimit-policy']).toContain('"rl.webhook_in";q=1;w=60');
  });

  it('rl.read: one bucket per principal; anonymous callers fall back to their client IP', async () => {
    const url = await start();
    // Both users act through one client application: the caller hierarchy would key them by tenant and client
    // together, the principal is the user.
    const user = (name: string, ip: string) => ({
      'x-tenant-id': 'acme',
      'x-client-id': 'web',
      'x-user-id': name,
      'x-forwarded-for': ip,
    });
    const alice = (ip: string) => user('alice', ip);
    // The principal's bucket follows the principal across client IPs.
    expect(await statuses(agent, `${url}/docs/1`, 1, alice('203.0.113.1'))).toEqual([200]);
    expect(await statuses(agent, `${url}/docs/2`, 2, alice('203.0.113.2'))).toEqual([200, 429]);
    // Another principal from the same IP has its own bucket.
    const bob = user('bob', '203.0.113.2');
    expect(await statuses(agent, `${url}/docs/1`, 2, bob)).toEqual([200, 200]);
    // Anonymous callers never share one bucket and never borrow a principal's: each client IP has its own.
    expect(await statuses(agent, `${url}/docs/1`, 3, { 'x-forwarded-for': '198.51.100.1' })).toEqual([
      200, 200, 429,
    ]);
    expect(await statuses(agent, `${url}/docs/1`, 1, { 'x-forwarded-for': '198.51.100.2' })).toEqual([200]);
    expect(await statuses(agent, `${url}/docs/1`, 1, { 'x-forwarded-for': '203.0.113.2' })).toEqual([200]);
  });
});
