import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/support/redis-server.js';
import { toolPath } from '../../../test/support/tools.js';
import { openWatchedPage } from '../../../test/support/watched-page.js';
import { buildDashboard } from '../dashboard-ui/build.js';
import {
  client,
  send,
  serveArgs,
  spawnSluice,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const CHROMIUM = toolPath('chromium');
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'dashboard');
const TOKEN = 'dashboard-admin-token-0123456789';

const YAML = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60000, burstLimit: 10000 }
  endpoints:
    - pattern: /api/reports/*
      name: reports
      concurrent: 5
overload:
  maxInFlight: 2
  reserve: 0
admin:
  port: 0
  token: \${ADMIN_TOKEN}
`;

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let t: TestGateway;
let profile: string;
let context: BrowserContext;
let page: Page;
let problems: string[] = [];
const held: ServerResponse[] = [];
const spawned: ChildProcess[] = [];

beforeAll(async () => {
  await buildDashboard();
  await mkdir(ARTIFACTS, { recursive: true });
  upstream = await startUpstream();
  upstream.handler = (req, res) => {
    req.resume();
    held.push(res);
  };
  t = await startGateway(join(tmp.dir, 'capacity.yaml'), {
    yaml: YAML,
    env: { ADMIN_TOKEN: TOKEN },
    overrides: { upstream: upstream.url },
    // Real wall time: the page turns the totals of successive statuses into rates.
    now: () => Date.now(),
  });
  profile = await mkdtemp(join(tmpdir(), 'sluice-capacity-chromium-'));
  ({ context, page, problems } = await openWatchedPage(CHROMIUM, profile, { width: 1440, height: 900 }));
}, 60_000);

afterAll(async () => {
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const res of held.splice(0)) res.end();
  await context?.close();
  await t?.gateway.close();
  await upstream?.close();
  await agent.close();
  if (profile !== undefined) await rm(profile, { recursive: true, force: true });
  tmp.cleanup();
});

describe('the dashboard capacity panel', () => {
  it('shows the overload limit, requests in flight, shed per second by priority, and in flight per policy', async () => {
    await page.goto(`${t.gateway.adminUrl}/dashboard/`);
    await page.fill('#token', TOKEN);
    await page.click('button[type=submit]');
    await page.waitForFunction(() => document.getElementById('connection')?.textContent === 'Live');
    await page.locator('#capacity-card').waitFor({ state: 'visible' });
    // Two requests held by the upstream fill the overload limit; both count under the reports policy.
    const running = [
      send(agent, `${t.gateway.url}/api/reports/a`),
      send(agent, `${t.gateway.url}/api/reports/b`),
    ];
    while (held.length < 2) await new Promise((r) => setImmediate(r));
    // Every further request is shed while they run, until the page shows a rate.
    let shedding = true;
    const shedLoop = (async () => {
      while (shedding) {
        expect((await send(agent, `${t.gateway.url}/api/other`)).status).toBe(503);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await page.waitForFunction(
      () => /normal [1-9]/.test(document.getElementById('overload-shed')?.textContent ?? ''),
      undefined,
      { timeout: 15_000 },
    );
    shedding = false;
    await shedLoop;
    expect(await page.locator('#overload-limit').textContent()).toBe('2 in flight');
    expect(await page.locator('#overload-inflight').textContent()).toContain('2 of 2');
    expect(await page.locator('#overload-shed').textContent()).toMatch(
      /^critical 0, normal [0-9.]+, sheddable 0$/,
    );
    const row = await page.locator('#in-flight tbody tr').first().textContent();
    expect(row?.replace(/\s+/g, ' ').trim()).toBe('reports25');
    await page.locator('#capacity-card').screenshot({ path: join(ARTIFACTS, 'capacity-panel.png') });
    for (const res of held.splice(0)) res.end('done');
    expect((await Promise.all(running)).map((r) => r.status)).toEqual([200, 200]);
    // Once they end, the panel shows nothing in flight.
    await page.waitForFunction(() =>
      document.getElementById('overload-inflight')?.textContent?.includes('0 of 2'),
    );
    expect(problems).toEqual([]);
  });

  it('shows the requests in flight per policy of every thread with sluice serve --threads 2', async () => {
    const adminPort = await freePort();
    const file = join(tmp.dir, 'capacity-threads.yaml');
    writeFileSync(
      file,
      'rateLimiting:\n  defaultTier: free\n  tiers:\n    free: { requestsPerMinute: 60000, burstLimit: 10000 }\n' +
        '  endpoints:\n    - { pattern: "/api/reports/*", name: reports, concurrent: 50 }\n' +
        `admin: { port: ${adminPort}, token: "${TOKEN}" }\n` +
        'server: { port: 1 }\nupstream: { url: "http://127.0.0.1:1" }\n',
    );
    const p = spawnSluice(process.execPath, serveArgs(file, upstream.url, 2), spawned);
    const { url } = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    await p.waitFor(/"thread":1.*sluice gateway listening/);
    await page.goto(`http://127.0.0.1:${adminPort}/dashboard/`);
    await page.fill('#token', TOKEN);
    await page.click('button[type=submit]');
    await page.waitForFunction(() => document.getElementById('connection')?.textContent === 'Live');
    await page.locator('#capacity-card').waitFor({ state: 'visible' });
    // 16 requests, each on a connection of its own, so that the kernel spreads them over both threads.
    const { hostname, port } = new URL(url);
    const running = Array.from(
      { length: 16 },
      () =>
        new Promise<string>((resolve, reject) => {
          const socket = connect(Number(port), hostname, () =>
            socket.write(`GET /api/reports/q HTTP/1.1\r\nhost: ${hostname}\r\nconnection: close\r\n\r\n`),
          );
          let text = '';
          socket.setEncoding('utf8');
          socket.on('data', (c: string) => {
            text += c;
          });
          socket.on('end', () => resolve(text.slice(9, 12)));
          socket.on('error', reject);
        }),
    );
    while (held.length < 16) await new Promise((r) => setTimeout(r, 20));
    await page.waitForFunction(
      () => document.querySelector('#in-flight tbody tr')?.textContent?.replace(/\s+/g, '') === 'reports1650',
      undefined,
      { timeout: 15_000 },
    );
    for (const res of held.splice(0)) res.end('done');
    expect(await Promise.all(running)).toEqual(Array(16).fill('200'));
    const threads = () =>
      new Set(
        p.lines
          .filter((l) => l.startsWith('{') && l.includes('"msg":"request"'))
          .map((l) => (JSON.parse(l) as { thread?: number }).thread),
      );
    // Request lines come through the main thread's output a moment after the answers.
    for (let i = 0; i < 100 && threads().size < 2; i++) await new Promise((r) => setTimeout(r, 50));
    expect(threads()).toEqual(new Set([0, 1]));
    await page.waitForFunction(
      () => document.querySelector('#in-flight tbody tr')?.textContent?.replace(/\s+/g, '') === 'reports050',
    );
    expect(problems).toEqual([]);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  }, 60_000);
});
