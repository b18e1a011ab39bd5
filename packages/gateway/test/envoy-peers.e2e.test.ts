import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { credentials, type ServiceError, status } from '@grpc/grpc-js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import { rateLimitPackage } from '../src/envoy/grpc-server.js';
import { startGateway, type TestGateway, tempDir } from './support.js';

const BASE = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
`;
const DOMAINS = `  domains:
    - domain: edge
      descriptors:
        - key: remote_address
          rate_limit: { requests_per_unit: 3, unit: minute }
`;

type Client = InstanceType<ReturnType<typeof rateLimitPackage>['RateLimitService']>;

/** One call on a channel of its own (a new connection), resolving with its overall code or its gRPC error. */
function callOnce(address: string): Promise<string | ServiceError> {
  const { RateLimitService } = rateLimitPackage();
  // A subchannel of its own: grpc-js otherwise shares one connection between the clients of a process.
  const c: Client = new RateLimitService(address, credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
  });
  return new Promise((resolve) => {
    c.ShouldRateLimit(
      { domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: '10.9.9.9' }] }] },
      (e: ServiceError | null, r: { overall_code: string }) => {
        c.close();
        resolve(e ?? r.overall_code);
      },
    );
  });
}

/** The bytes a raw TCP connection gets until the server closes it (an HTTP/2 server sends its SETTINGS first). */
function firstBytes(address: string): Promise<number> {
  const port = Number(address.slice(address.lastIndexOf(':') + 1));
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    s.once('data', (d: Buffer) => {
      s.destroy();
      resolve(d.length);
    });
    s.once('close', () => resolve(0));
  });
}

describe('the Envoy rate limit service admits peers before reading them', () => {
  const { dir, cleanup } = tempDir();
  let t: TestGateway | undefined;
  afterEach(async () => {
    await t?.gateway.close();
    t = undefined;
  });
  afterAll(() => cleanup());

  const start = async (envoy: string) => {
    t = await startGateway(join(dir, 'rl.yaml'), { yaml: `${BASE}envoy:\n  port: 0\n${envoy}${DOMAINS}` });
    return t.gateway.envoyAddress as string;
  };

  it('closes a connection from a peer outside envoy.allowedPeers before reading it, and follows a reload', async () => {
    const address = await start('  allowedPeers: ["10.0.0.0/8"]\n');
    expect(await firstBytes(address)).toBe(0);
    const refused = await callOnce(address);
    expect((refused as ServiceError).code).toBe(status.UNAVAILABLE);
    const warning = t?.logs.lines.find((l) => String(l.msg).includes('envoy.allowedPeers'));
    expect(warning).toMatchObject({ level: 40, peer: '127.0.0.1' });
    writeFileSync(t?.file as string, `${BASE}envoy:\n  port: 0\n  allowedPeers: [loopback]\n${DOMAINS}`);
    const reloaded = await t?.gateway.reload();
    expect(reloaded?.ok).toBe(true);
    expect(await firstBytes(address)).toBeGreaterThan(0);
    expect(await callOnce(address)).toBe('OK');
  });

  it('serves loopback peers by default', async () => {
    const address = await start('');
    expect(await callOnce(address)).toBe('OK');
  });

  it('holds at most envoy.maxConnections connections', async () => {
    const address = await start('  maxConnections: 1\n');
    const { RateLimitService } = rateLimitPackage();
    const held: Client = new RateLimitService(address, credentials.createInsecure());
    try {
      const first = await new Promise<string>((resolve, reject) =>
        held.ShouldRateLimit(
          { domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: '10.9.9.8' }] }] },
          (e: ServiceError | null, r: { overall_code: string }) => (e ? reject(e) : resolve(r.overall_code)),
        ),
      );
      expect(first).toBe('OK');
      expect(((await callOnce(address)) as ServiceError).code).toBe(status.UNAVAILABLE);
    } finally {
      held.close();
    }
  });
});

describe('envoy: peers and connections configuration', () => {
  const load = (extra: string) => loadConfigText(`${BASE}envoy:\n${extra}${DOMAINS}`, undefined, { env: {} });

  it('defaults to loopback peers and 4096 connections', () => {
    const r = load('  port: 0\n');
    expect(r.config?.envoy?.allowedPeers).toEqual(['loopback']);
    expect(r.config?.envoy?.maxConnections).toBe(4096);
  });

  it('reports an invalid peer with its index, as decision.allowedPeers does', () => {
    const r = load('  allowedPeers: [loopback, "10.0.0.0/99"]\n');
    expect(r.violations.map((v) => v.path)).toEqual(['envoy.allowedPeers[1]']);
    expect(r.violations[0]?.message).toMatch(/CIDR/);
  });
});
