import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { compiledSluice } from './compiled-sluice.js';
import {
  client,
  echo,
  send,
  serveArgs,
  spawnSluice,
  startUpstream,
  type TestUpstream,
  tempDir,
} from './support.js';

const EXAMPLE = fileURLToPath(new URL('../examples/rate-limits.yaml', import.meta.url));
const tmp = tempDir();
const agent = client();
const spawned: ChildProcess[] = [];
let upstream: TestUpstream;
/** The command compiled from the sources once: each `sluice` started below starts faster than through tsx. */
let compiled: Awaited<ReturnType<typeof compiledSluice>>;

beforeAll(async () => {
  [upstream, compiled] = await Promise.all([startUpstream(), compiledSluice()]);
});
afterAll(async () => {
  // A failed assertion must not leave a server running.
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await upstream.close();
  await agent.close();
  compiled?.remove();
  tmp.cleanup();
});

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), onSignal: () => () => undefined },
  };
}

/** Runs the command compiled from the sources under this Node.js and collects its output. */
const runSluice = (args: string[]) => spawnSluice(process.execPath, args, spawned, compiled.bin);

const exited = (child: ChildProcess) =>
  new Promise<number | null>((r) => child.once('exit', (code) => r(code)));

describe('sluice validate and --help', () => {
  it('prints help', async () => {
    const o = io();
    expect(await main(['--help'], o.io)).toBe(0);
    expect(o.out.join('')).toMatch(/sluice serve --config FILE \[--upstream URL\]/);
    expect(await main([], o.io)).toBe(2);
    expect(await main(['bogus'], o.io)).toBe(2);
    expect(o.err.join('')).toMatch(/unknown command "bogus"/);
  });

  it('validates the example configuration and reports every violation of a bad file with file:line', async () => {
    const o = io();
    expect(await main(['validate', EXAMPLE], o.io)).toBe(0);
    expect(o.out.join('')).toMatch(/valid \(3 tiers, 3 endpoint rules, 0 classes\)/);
    const bad = join(tmp.dir, 'bad.yaml');
    writeFileSync(
      bad,
      'rateLimiting:\n  defaultTier: gold\n  tiers:\n    free: { requestsPerMinute: 1, burst: 2 }\n',
    );
    const e = io();
    expect(await main(['validate', bad], e.io)).toBe(1);
    expect(e.err.join('')).toBe(
      `${bad}:2:16 rateLimiting.defaultTier: tier "gold" is not defined; defined: free\n` +
        `${bad}:4:35 rateLimiting.tiers.free.burst: unknown key "burst"; known keys: requestsPerMinute, requestsPerHour, burstLimit, cost, count, unlimited, priority, concurrentRequests, queue, problemCode, shadow\n` +
        `${bad}: 2 violations\n`,
    );
  });

  it('validates every file given, exits with the worst result, and names extra arguments of other commands', async () => {
    const bad = join(tmp.dir, 'bad-many.yaml');
    writeFileSync(bad, 'rateLimiting:\n  defaultTier: gold\n');
    const o = io();
    expect(await main(['validate', EXAMPLE, bad, EXAMPLE], o.io)).toBe(1);
    expect(o.out.join('').match(/: valid \(3 tiers/g)).toHaveLength(2);
    expect(o.err.join('')).toContain(`${bad}: `);
    const e = io();
    expect(await main(['serve', EXAMPLE, 'access.log'], e.io)).toBe(2);
    expect(e.err.join('')).toMatch(/serve takes one argument; unexpected "access\.log"/);
    expect(await main(['demo', 'x'], e.io)).toBe(2);
    expect(e.err.join('')).toMatch(/demo takes no argument; unexpected "x"/);
  });

  it('rejects bad flags', async () => {
    const o = io();
    expect(await main(['serve', '--config', EXAMPLE, '--port', 'x'], o.io)).toBe(2);
    expect(await main(['serve', '--config', EXAMPLE, '--upstream', 'ftp://x'], o.io)).toBe(2);
    expect(await main(['serve', '--config', EXAMPLE], o.io)).toBe(1);
    expect(o.err.join('')).toMatch(/no upstream: set upstream.url .* or pass --upstream URL/);
    expect(await main(['hash-key', 'abc'], o.io)).toBe(0);
    expect(o.out.join('')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n');
  });
});

describe('sluice serve', () => {
  it('serves with flags over the file, reloads on SIGHUP and drains on SIGTERM', async () => {
    const file = join(tmp.dir, 'serve.yaml');
    writeFileSync(
      file,
      'rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 60, burstLimit: 4 }\nserver: { port: 1 }\nupstream: { url: "http://127.0.0.1:1" }\n',
    );
    // One thread: the reload below is awaited on its one log line (threads.e2e covers several threads).
    const p = runSluice(serveArgs(file, upstream.url, 1));
    const listening = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    const r = await send(agent, `${listening.url}/x`);
    expect(r.status).toBe(200);
    expect(r.headers.ratelimit).toBe('"t";r=3;t=1');
    writeFileSync(
      file,
      'rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 60, burstLimit: 9 }\n',
    );
    p.child.kill('SIGHUP');
    await p.waitFor(/configuration reloaded/);
    // The tier's limits changed, so its policy is new and starts full: 9 - 1.
    expect((await send(agent, `${listening.url}/x`)).headers.ratelimit).toBe('"t";r=8;t=1');
    p.child.kill('SIGTERM');
    expect(await exited(p.child)).toBe(0);
    expect(p.lines.some((l) => l.includes('sluice gateway stopped'))).toBe(true);
  });
});

describe('sluice serve draining on SIGTERM', () => {
  it('answers /health 200, /ready 503 and new requests 503 shutting_down until the request in flight ends', async () => {
    const file = join(tmp.dir, 'drain.yaml');
    writeFileSync(
      file,
      'rateLimiting:\n  defaultTier: t\n  tiers:\n    t: { requestsPerMinute: 60, burstLimit: 4 }\n',
    );
    const p = runSluice(serveArgs(file, upstream.url, 1));
    const { url } = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    let release!: () => void;
    const arrived = new Promise<void>((r) => {
      upstream.handler = (req, res) => {
        req.resume();
        release = () => res.end('slow done');
        r();
      };
    });
    const slowAgent = client();
    const late = client();
    try {
      const slow = send(slowAgent, `${url}/slow`);
      await arrived;
      p.child.kill('SIGTERM');
      await p.waitFor(/draining requests in flight/);
      // New connections during the drain: the probes get their answers (liveness holds, readiness fails), and a
      // request for the upstream is refused with a problem rather than a refused connection.
      expect((await send(late, `${url}/health`)).status).toBe(200);
      const ready = await send(late, `${url}/ready`);
      expect([ready.status, ready.json()]).toEqual([503, { status: 'draining' }]);
      const refused = await send(late, `${url}/x`);
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.json()).toMatchObject({ status: 503, code: 'shutting_down' });
      release();
      expect(await slow).toMatchObject({ status: 200, text: 'slow done' });
      expect(await p.exited).toBe(0);
    } finally {
      upstream.handler = echo;
      await Promise.all([slowAgent.close(), late.close()]);
    }
  });
});

describe('sluice demo', () => {
  it('serves the example configuration in front of the echo upstream and prints a curl line', async () => {
    const p = runSluice(['demo', '--port', '0']);
    const line = await p.waitFor(/^ {2}gateway: /);
    const url = line.replace(/^ {2}gateway:\s+/, '').trim();
    await p.waitFor(/Press Ctrl-C to stop/);
    expect(
      p.lines.some((l) => /curl -i http:\/\/127\.0\.0\.1:\d+\/api\/risk\/simulation\/studio\/run/.test(l)),
    ).toBe(true);
    const r = await send(agent, `${url}/api/risk/simulation/studio/run`);
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ echo: true, url: '/api/risk/simulation/studio/run' });
    expect(r.headers['x-ratelimit-limit']).toBe('10');
    p.child.kill('SIGINT');
    expect(await exited(p.child)).toBe(0);
  });
});
