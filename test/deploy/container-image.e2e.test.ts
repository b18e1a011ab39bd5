/**
 * The container image, built from the repository's Dockerfile with podman and run for real. No registry of
 * container images is reachable from the test machines, so the suite makes the Node.js 24 base image itself (npm's
 * `node` binary and the libraries it links) and passes it as `NODE_IMAGE`; the application folder is made on the
 * host by scripts/image-app.mjs and built in as the Dockerfile's `prebuilt` target, which shares every setting
 * with the default target (user, entry point, command, health check, signals). Runs once, on the main line
 * (scripts/node-lines.mjs opts it out elsewhere); `SLUICE_SKIP_CONTAINERS=1` opts it out by hand.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN_LINE, nodeLine } from '../../scripts/node-line.mjs';
import { Podman, testNodeImage } from '../support/podman.js';
import { freePort, type RedisServer, startRedisServer } from '../support/redis-server.js';
import { toolPath } from '../support/tools.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const IMAGE = 'localhost/sluice:test';
const MINUTE = 60_000;
const run = promisify(execFile);

const podman = new Podman(toolPath('podman'), toolPath('runc'));
const work = mkdtempSync(join(tmpdir(), 'sluice-image-'));
const agent = new Agent({ connections: 256, keepAliveTimeout: 1000 });
let upstream: Server;
let upstreamUrl: string;
/** What the upstream does with a request; the default answers at once. */
let handler: (req: IncomingMessage, res: ServerResponse) => void;
const answer = (req: IncomingMessage, res: ServerResponse) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'text/plain' }).end(`upstream ${req.url}`);
};

beforeAll(async () => {
  // The image holds what `npm run build` makes from this tree, packed and installed without dev dependencies.
  await run('npm', ['run', '-s', 'build'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  const context = join(work, 'context');
  await run(process.execPath, [join(ROOT, 'scripts/image-app.mjs'), join(context, 'image-app')], {
    cwd: ROOT,
  });
  const base = await testNodeImage(podman, join(nodeLine(MAIN_LINE, { quiet: true }), 'node'));
  // The previous run's image, removed once the tag moves on, so that runs do not pile up untagged images.
  const previous = (await podman.run(['image', 'inspect', '--format', '{{.Id}}', IMAGE])).stdout.trim();
  // Docker's format: OCI images have no HEALTHCHECK.
  await podman.ok(
    [
      'build',
      '--format',
      'docker',
      '--target',
      'prebuilt',
      '--build-arg',
      `NODE_IMAGE=${base}`,
      '-f',
      join(ROOT, 'Dockerfile'),
      '-t',
      IMAGE,
      context,
    ],
    3 * MINUTE,
  );
  const built = (await podman.ok(['image', 'inspect', '--format', '{{.Id}}', IMAGE])).trim();
  if (previous !== '' && previous !== built) await podman.run(['image', 'rm', previous]);
  handler = answer;
  upstream = createServer((req, res) => handler(req, res));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
}, 5 * MINUTE);

afterAll(async () => {
  await podman.dispose();
  upstream?.closeAllConnections();
  upstream?.close();
  await agent.close();
  rmSync(work, { recursive: true, force: true });
}, MINUTE);

/** GETs `url` and reads the whole answer. */
async function get(url: string): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  const r = await request(url, { dispatcher: agent });
  return { status: r.statusCode, headers: r.headers, text: await r.body.text() };
}

/** Waits until `url` answers 200 (the container has started), trying at most `attempts` times. */
async function untilUp(url: string, attempts = 200): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    try {
      if ((await get(url)).status === 200) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer 200`);
}

/** A configuration file for `serve` on the host's network. */
function configFile(name: string, yaml: string): string {
  const file = join(work, name);
  writeFileSync(file, yaml);
  return file;
}

describe('the container image', () => {
  it('runs as a non-root user on a read-only root filesystem, with the gateway as PID 1', async () => {
    const image = JSON.parse(await podman.ok(['image', 'inspect', IMAGE]))[0];
    const config = image.Config;
    expect(config.User).toBe('1000:1000');
    expect(config.Entrypoint).toEqual(['sluice']);
    expect(config.Cmd).toEqual(['serve', '--config', '/etc/sluice/rate-limits.yaml']);
    expect(config.StopSignal).toBe('SIGTERM');
    expect(image.Healthcheck.Test.join(' ')).toContain('SLUICE_HEALTH_URL');
    expect(config.Env).toContain('SLUICE_DEFAULT_HOST=0.0.0.0');

    const id = await podman.start(['--read-only', '-p', '127.0.0.1::8080', IMAGE, 'demo']);
    const published = (await podman.ok(['port', id, '8080/tcp'])).trim().split('\n')[0];
    const url = `http://${published}`;
    await untilUp(`${url}/health`);

    const probe = `
      const fs = require('node:fs');
      const tryWrite = (f) => { try { fs.writeFileSync(f, 'x'); return 'written'; } catch (e) { return e.code; } };
      console.log(JSON.stringify({
        uid: process.getuid(), gid: process.getgid(),
        pid1: fs.readFileSync('/proc/1/cmdline', 'utf8').split('\\0').filter(Boolean),
        app: tryWrite('/opt/sluice/x'), etc: tryWrite('/etc/x'), tmp: tryWrite('/tmp/x'),
      }));`;
    const facts = JSON.parse(await podman.ok(['exec', id, 'node', '-e', probe]));
    expect(facts).toMatchObject({ uid: 1000, gid: 1000, app: 'EROFS', etc: 'EROFS', tmp: 'written' });
    // The gateway itself, not a shell, receives the stop signal: node running the sluice launcher.
    expect(facts.pid1[0]).toMatch(/node$/);
    expect(facts.pid1.slice(-2)).toEqual([expect.stringMatching(/sluice$/), 'demo']);

    // The image's own health check passes (podman healthcheck run exits 0 when healthy).
    expect((await podman.run(['healthcheck', 'run', id])).code).toBe(0);
  });

  it('runs sluice demo with one argument and answers through the published port with its headers', async () => {
    // Not even a writable /tmp (podman mounts one with --read-only, docker does not): the gateway writes no file.
    const id = await podman.start([
      '--read-only',
      '--read-only-tmpfs=false',
      '-p',
      '127.0.0.1::8080',
      IMAGE,
      'demo',
    ]);
    const url = `http://${(await podman.ok(['port', id, '8080/tcp'])).trim().split('\n')[0]}`;
    await untilUp(`${url}/health`);
    const r = await get(`${url}/api/risk/simulation/studio/run`);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toMatchObject({ echo: true, url: '/api/risk/simulation/studio/run' });
    expect(r.headers['x-ratelimit-limit']).toBe('10');
    expect(r.headers['x-ratelimit-remaining']).toBe('9');
    expect(r.headers.ratelimit).toMatch(/r=9/);
    expect(r.headers['ratelimit-policy']).toBeDefined();
    expect(await podman.ok(['logs', id])).toContain('sluice demo: the example configuration');
  });

  it('serves a mounted file without server.host on every interface, reachable through the published port', async () => {
    const file = configFile(
      'no-host.yaml',
      `upstream:
  url: http://127.0.0.1:9
rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
`,
    );
    const id = await podman.start([
      '--read-only',
      '-p',
      '127.0.0.1::8080',
      '-v',
      `${file}:/etc/sluice/rate-limits.yaml:ro`,
      IMAGE,
    ]);
    const url = `http://${(await podman.ok(['port', id, '8080/tcp'])).trim().split('\n')[0]}`;
    await untilUp(`${url}/health`);
  });

  it('drains on SIGTERM as PID 1: the request in flight finishes, the probes answer meanwhile, exit 0', async () => {
    const port = await freePort();
    const file = configFile(
      'drain.yaml',
      `server:
  host: 127.0.0.1
  port: ${port}
  shutdownTimeout: 60s
upstream:
  url: ${upstreamUrl}
rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 600, burstLimit: 100 }
`,
    );
    const id = await podman.start([
      '--read-only',
      '--network',
      'host',
      '-v',
      `${file}:/etc/sluice/rate-limits.yaml:ro`,
      IMAGE,
    ]);
    await untilUp(`http://127.0.0.1:${port}/ready`);

    let release!: () => void;
    const arrived = new Promise<void>((r) => {
      handler = (req, res) => {
        req.resume();
        release = () => res.writeHead(200).end('slow done');
        r();
      };
    });
    const slow = get(`http://127.0.0.1:${port}/slow`);
    await arrived;
    await podman.ok(['kill', '--signal', 'SIGTERM', id]);
    // The request in flight is still held by the upstream: /ready turns 503 at once, and the listener stays open
    // for the probes (liveness holds until the process exits).
    let draining = false;
    for (let i = 0; i < 200 && !draining; i++) {
      draining = (await get(`http://127.0.0.1:${port}/ready`)).status === 503;
      if (!draining) await new Promise((r) => setTimeout(r, 50));
    }
    expect(draining).toBe(true);
    expect((await get(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    expect((await get(`http://127.0.0.1:${port}/other`)).status).toBe(503);
    expect(await podman.ok(['inspect', '--format', '{{.State.Running}}', id])).toContain('true');
    release();
    expect(await slow).toMatchObject({ status: 200, text: 'slow done' });
    expect((await podman.ok(['wait', id], MINUTE)).trim()).toBe('0');
    const logs = await podman.run(['logs', id]);
    expect(`${logs.stdout}${logs.stderr}`).toContain('draining requests in flight');
    handler = answer;
  });

  it('reloads every thread when a ConfigMap-style mount swaps its ..data symlink', async () => {
    const port = await freePort();
    const volume = join(work, 'configmap');
    mkdirSync(volume);
    const config = (burst: number) => `server:
  host: 127.0.0.1
  port: ${port}
upstream:
  url: ${upstreamUrl}
rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, burstLimit: ${burst} }
`;
    // The kubelet's atomic writer: a new timestamped folder, `..data_tmp` pointed at it, renamed over `..data`.
    const publish = (generation: string, burst: number) => {
      mkdirSync(join(volume, generation));
      writeFileSync(join(volume, generation, 'rate-limits.yaml'), config(burst));
      symlinkSync(generation, join(volume, '..data_tmp'));
      renameSync(join(volume, '..data_tmp'), join(volume, '..data'));
    };
    publish('..2026_12_07_10_00_01.000000001', 5);
    symlinkSync('..data/rate-limits.yaml', join(volume, 'rate-limits.yaml'));
    const id = await podman.start([
      '--read-only',
      '--network',
      'host',
      '-v',
      `${volume}:/etc/sluice:ro`,
      IMAGE,
      'serve',
      '--config',
      '/etc/sluice/rate-limits.yaml',
      '--threads',
      '2',
    ]);
    const url = `http://127.0.0.1:${port}/x`;
    await untilUp(`http://127.0.0.1:${port}/ready`);
    expect((await get(url)).headers.ratelimit).toMatch(/^"free";r=\d;t=\d+$/);

    publish('..2026_12_07_10_00_02.000000002', 50);
    rmSync(join(volume, '..2026_12_07_10_00_01.000000001'), { recursive: true });
    // Each thread takes the new file: every answer comes to show the larger burst, whichever thread serves it.
    let reloaded = 0;
    for (let i = 0; i < 300 && reloaded < 10; i++) {
      const r = await get(url);
      reloaded = /^"free";r=[1-4]\d;/.test(String(r.headers.ratelimit)) ? reloaded + 1 : 0;
      if (reloaded === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(reloaded).toBe(10);
    const logs = await podman.run(['logs', id]);
    expect(`${logs.stdout}${logs.stderr}`).toContain('configuration reloaded');
  });

  it('keeps exactly 5 of 200 concurrent requests on a 5-per-hour rule with two gateways and one Redis', async () => {
    let redis: RedisServer | undefined;
    try {
      redis = await startRedisServer();
      const ports = [await freePort(), await freePort()];
      const file = configFile(
        'fleet.yaml',
        `server:
  host: 127.0.0.1
upstream:
  url: ${upstreamUrl}
store:
  type: redis
  url: redis://127.0.0.1:${redis.port}
  failureMode: closed
  # This test counts what Redis decided: a call slowed by a busy machine must wait, not fail closed.
  timeout: 10s
rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 100000, burstLimit: 10000 }
  endpoints:
    - pattern: /seal
      limit: 5
      window: 3600s
`,
      );
      for (const port of ports) {
        await podman.start([
          '--read-only',
          '--network',
          'host',
          '-v',
          `${file}:/etc/sluice/rate-limits.yaml:ro`,
          IMAGE,
          'serve',
          '--config',
          '/etc/sluice/rate-limits.yaml',
          '--port',
          String(port),
          '--threads',
          '1',
        ]);
      }
      for (const port of ports) await untilUp(`http://127.0.0.1:${port}/ready`);
      const statuses = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          get(`http://127.0.0.1:${ports[i % 2]}/seal`).then((r) => r.status),
        ),
      );
      const counts: Record<number, number> = {};
      for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
      expect(counts).toEqual({ 200: 5, 429: 195 });
    } finally {
      await redis?.stop();
    }
  });
});
