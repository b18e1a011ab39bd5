/**
 * What an operator sees of a running gateway while it sheds load or is misconfigured: the admin listener's
 * `/metrics` while the proxy listener is at its cap, the cap in force in `GET /config` and the start line, one
 * problem shape for every admin error, listen errors that name their option, and a reload that would leave the
 * gateway without an upstream (rejected, with and without `--threads`, as a start refuses it).
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { compiledSluice } from './compiled-sluice.js';
import {
  client,
  send,
  spawnSluice,
  startGateway,
  startUpstream,
  type TestUpstream,
  tempDir,
} from './support.js';

const LIMITS = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 6000, burstLimit: 1000 }
`;
const TOKEN = 'operator-views-admin-token';
const auth = { authorization: `Bearer ${TOKEN}` };

const tmp = tempDir();
const agent = client();
const spawned: ChildProcess[] = [];
const sockets: Socket[] = [];
let upstream: TestUpstream;
/** The command compiled from the sources once: each `sluice` started below starts faster than through tsx. */
let compiled: Awaited<ReturnType<typeof compiledSluice>>;

beforeAll(async () => {
  [upstream, compiled] = await Promise.all([startUpstream(), compiledSluice()]);
});
afterAll(async () => {
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const s of sockets) s.destroy();
  await upstream.close();
  await agent.close();
  compiled?.remove();
  tmp.cleanup();
});

/** Opens a socket that sends a request head without its last line: the gateway holds it open. */
function hold(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1' });
    sockets.push(s);
    s.on('error', () => undefined);
    s.once('error', reject);
    s.once('connect', () => {
      s.write('GET /health HTTP/1.1\r\nhost: sluice-test\r\n');
      resolve(s);
    });
  });
}

/** The first answer's status on a fresh connection to `port`. */
function statusOn(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const s = connect({ port, host: '127.0.0.1' });
    let text = '';
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m !== null) {
        resolve(Number(m[1]));
        s.destroy();
      }
    });
    s.on('error', () => resolve(0));
    s.on('close', () => resolve(0));
    s.write(`GET ${path} HTTP/1.1\r\nhost: sluice-test\r\n\r\n`);
  });
}

const portOf = (url: string) => Number(new URL(url).port);

describe('the admin listener while the proxy listener is at its cap', () => {
  it('serves /metrics behind the token with the refusals the proxy port cannot show', async () => {
    const t = await startGateway(join(tmp.dir, 'cap.yaml'), {
      yaml: `${LIMITS}server: { maxConnections: 2, maxConnectionsPerClient: 0 }\nupstream: { url: ${upstream.url} }\nadmin: { port: 0, token: ${TOKEN} }\n`,
    });
    try {
      const port = portOf(t.gateway.url);
      await hold(port);
      await hold(port);
      // The proxy port is full: its own /metrics is refused with the connection.
      expect(await statusOn(port, '/metrics')).toBe(503);
      const admin = t.gateway.adminUrl as string;
      const r = await send(agent, `${admin}/metrics`, { headers: auth });
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toMatch(/^text\/plain/);
      expect(r.text).toMatch(/^sluice_connections_refused_total\{reason="total"\} 1$/m);
      expect(r.text).toMatch(/^sluice_connections_open 2$/m);
      expect(r.text).toMatch(/^# TYPE sluice_rate_limit_exceeded_total counter$/m);
      const anonymous = await send(agent, `${admin}/metrics`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers['content-type']).toBe('application/problem+json');
      expect(anonymous.json()).toMatchObject({ status: 401, code: 'unauthorized', instance: '/metrics' });
      expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="sluice-admin"');
      const post = await send(agent, `${admin}/metrics`, { method: 'POST', headers: auth });
      expect(post.status).toBe(405);
      expect(post.json()).toMatchObject({ code: 'method_not_allowed' });
    } finally {
      await t.gateway.close();
    }
  });

  it('answers 404 metrics_disabled when metrics.enabled is false', async () => {
    const t = await startGateway(join(tmp.dir, 'nometrics.yaml'), {
      yaml: `${LIMITS}metrics: { enabled: false }\nupstream: { url: ${upstream.url} }\nadmin: { port: 0, token: ${TOKEN} }\n`,
    });
    try {
      const r = await send(agent, `${t.gateway.adminUrl}/metrics`, { headers: auth });
      expect(r.status).toBe(404);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(r.json()).toMatchObject({ code: 'metrics_disabled' });
    } finally {
      await t.gateway.close();
    }
  });
});

describe('the connection cap in force', () => {
  it('is in GET /config and the start line when derived from the open file limit, and as set otherwise', async () => {
    const derived = await startGateway(join(tmp.dir, 'derived.yaml'), {
      yaml: `${LIMITS}upstream: { url: ${upstream.url} }\nadmin: { port: 0, token: ${TOKEN} }\n`,
    });
    try {
      const cap = derived.gateway.maxConnections;
      expect(cap).toBeGreaterThan(0);
      expect(derived.gateway.config.server.maxConnections).toBeUndefined();
      const r = await send(agent, `${derived.gateway.adminUrl}/config`, { headers: auth });
      expect(r.json<{ server: { maxConnections: number } }>().server.maxConnections).toBe(cap);
      const line = derived.logs.lines.find((l) => l.msg === 'sluice gateway listening');
      expect(line).toMatchObject({ maxConnections: cap });
    } finally {
      await derived.gateway.close();
    }
    const set = await startGateway(join(tmp.dir, 'set.yaml'), {
      yaml: `${LIMITS}server: { maxConnections: 7 }\nupstream: { url: ${upstream.url} }\nadmin: { port: 0, token: ${TOKEN} }\n`,
    });
    try {
      const r = await send(agent, `${set.gateway.adminUrl}/config`, { headers: auth });
      expect(r.json<{ server: { maxConnections: number } }>().server.maxConnections).toBe(7);
      expect(set.logs.lines.find((l) => l.msg === 'sluice gateway listening')).toMatchObject({
        maxConnections: 7,
      });
    } finally {
      await set.gateway.close();
    }
  });
});

describe('admin errors', () => {
  it('are application/problem+json with a stable code', async () => {
    const t = await startGateway(join(tmp.dir, 'errors.yaml'), {
      yaml: `${LIMITS}upstream: { url: ${upstream.url} }\nadmin: { port: 0, token: ${TOKEN} }\n`,
    });
    try {
      const admin = t.gateway.adminUrl as string;
      const problem = async (path: string, init: { method?: string; headers?: Record<string, string> }) => {
        const r = await send(agent, `${admin}${path}`, init);
        expect(r.headers['content-type'], path).toBe('application/problem+json');
        expect(r.headers['cache-control'], path).toBe('no-store');
        return { status: r.status, body: r.json(), headers: r.headers };
      };
      const unauthorized = await problem('/config', { headers: { authorization: 'Bearer wrong' } });
      expect(unauthorized).toMatchObject({
        status: 401,
        body: {
          type: 'about:blank',
          title: 'Unauthorized',
          status: 401,
          code: 'unauthorized',
          instance: '/config',
        },
      });
      const unknown = await problem('/nothing?x=1', { headers: auth });
      expect(unknown.status).toBe(404);
      expect(unknown.body).toMatchObject({ code: 'not_found', instance: '/nothing' });
      expect(unknown.body.routes).toContain('GET /metrics');
      const quota = await problem('/quota/top', { headers: auth });
      expect(quota).toMatchObject({ status: 404, body: { code: 'quota_not_configured' } });
      const method = await problem('/keys/ip%3A1.2.3.4', { method: 'PUT', headers: auth });
      expect(method).toMatchObject({ status: 405, body: { code: 'method_not_allowed' } });
      expect(method.headers.allow).toBe('GET, DELETE');
      const override = await problem('/overrides?id=none', { method: 'DELETE', headers: auth });
      expect(override).toMatchObject({ status: 404, body: { code: 'not_found' } });
      const history = await problem('/overrides/history', { method: 'POST', headers: auth });
      expect(history).toMatchObject({ status: 405, body: { code: 'method_not_allowed' } });
    } finally {
      await t.gateway.close();
    }
  });
});

describe('listen errors', () => {
  it('name the option of the port that is taken', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    try {
      const admin = startGateway(join(tmp.dir, 'taken-admin.yaml'), {
        yaml: `${LIMITS}upstream: { url: ${upstream.url} }\nadmin: { port: ${port}, token: ${TOKEN} }\n`,
      });
      await expect(admin).rejects.toThrow(
        /^admin\.port \(the admin listener\): listen EADDRINUSE: address already in use 127\.0\.0\.1:\d+$/,
      );
      await expect(admin).rejects.toMatchObject({ code: 'EADDRINUSE' });
      const proxy = startGateway(join(tmp.dir, 'taken-proxy.yaml'), {
        yaml: `${LIMITS}upstream: { url: ${upstream.url} }\n`,
        overrides: { port },
      });
      await expect(proxy).rejects.toThrow(/^server\.port \(the proxy listener\): listen EADDRINUSE/);
      const decision = startGateway(join(tmp.dir, 'taken-decision.yaml'), {
        yaml: `${LIMITS}decision: { port: ${port} }\n`,
      });
      await expect(decision).rejects.toThrow(/^decision\.port \(the decision API\): .*EADDRINUSE/);
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });
});

describe('a reload without an upstream', () => {
  const withUpstream = `${LIMITS}upstream: { url: ${'URL'} }\n`;

  it('is rejected like a start, keeping the upstream in effect', async () => {
    const file = join(tmp.dir, 'reload-upstream.yaml');
    const t = await startGateway(file, { yaml: withUpstream.replace('URL', upstream.url) });
    try {
      writeFileSync(file, LIMITS);
      const result = await t.gateway.reload();
      expect(result.ok).toBe(false);
      expect(result.violations).toEqual([
        {
          path: 'upstream.url',
          line: 0,
          column: 0,
          message: `no upstream: set upstream.url in ${file} or pass --upstream URL`,
        },
      ]);
      expect(
        t.logs.lines.some(
          (l) => l.msg === 'configuration reload rejected; keeping the current configuration',
        ),
      ).toBe(true);
      expect((await send(agent, `${t.gateway.url}/api/x`)).status).toBe(200);
      expect(t.gateway.config.upstream.url).toBe(upstream.url);
    } finally {
      await t.gateway.close();
    }
  });

  it('is accepted when a decision: section still serves, or the upstream comes from the command line', async () => {
    const file = join(tmp.dir, 'reload-decision.yaml');
    const t = await startGateway(file, { yaml: withUpstream.replace('URL', upstream.url) });
    try {
      writeFileSync(file, `${LIMITS}decision: { port: 0 }\n`);
      expect((await t.gateway.reload()).ok).toBe(true);
    } finally {
      await t.gateway.close();
    }
    const flagged = join(tmp.dir, 'reload-flag.yaml');
    const f = await startGateway(flagged, { yaml: LIMITS, overrides: { upstream: upstream.url } });
    try {
      writeFileSync(flagged, `${LIMITS}# edited\n`);
      expect((await f.gateway.reload()).ok).toBe(true);
      expect((await send(agent, `${f.gateway.url}/api/x`)).status).toBe(200);
    } finally {
      await f.gateway.close();
    }
  });

  it('is rejected once for every thread of sluice serve --threads, which keep serving', async () => {
    const file = join(tmp.dir, 'reload-threads.yaml');
    writeFileSync(file, withUpstream.replace('URL', upstream.url));
    const p = spawnSluice(
      process.execPath,
      ['serve', '--config', file, '--port', '0', '--threads', '2'],
      spawned,
      compiled.bin,
    );
    const listening = JSON.parse(await p.waitFor(/sluice gateway listening on every thread/)) as {
      url: string;
    };
    writeFileSync(file, LIMITS);
    p.child.kill('SIGHUP');
    await p.waitFor(/configuration reload rejected; keeping the current configuration/);
    expect(
      p.lines.some((l) => l.includes(`no upstream: set upstream.url in ${file} or pass --upstream URL`)),
    ).toBe(true);
    expect(p.lines.some((l) => l.includes('configuration read for every thread'))).toBe(false);
    expect((await send(agent, `${listening.url}/api/x`)).status).toBe(200);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('is a W_NO_UPSTREAM warning of sluice validate, gone with --upstream', async () => {
    const file = join(tmp.dir, 'validate-nourl.yaml');
    writeFileSync(file, LIMITS);
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      out: (s: string) => out.push(s),
      err: (s: string) => err.push(s),
      onSignal: () => () => undefined,
    };
    expect(await main(['validate', file], io)).toBe(0);
    expect(err.join('')).toBe(
      `${file} upstream.url: warning W_NO_UPSTREAM: no upstream: set upstream.url in ${file} or pass --upstream URL; sluice serve refuses this file without --upstream, and a reload to it is rejected; suggestion: set upstream.url, pass --upstream URL to sluice serve (and to sluice validate), or add a decision: or envoy: section\n`,
    );
    expect(out.join('')).toBe(`${file}: valid (1 tier, 0 endpoint rules, 0 classes), 1 warning\n`);
    out.length = 0;
    err.length = 0;
    expect(await main(['validate', '--upstream', upstream.url, file], io)).toBe(0);
    expect(err).toEqual([]);
    expect(out.join('')).toBe(`${file}: valid (1 tier, 0 endpoint rules, 0 classes)\n`);
  });
});
