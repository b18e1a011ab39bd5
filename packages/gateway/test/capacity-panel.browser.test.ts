import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/support/redis-server.js';
import { toolPath } from '../../../test/support/tools.js';
import { compiledSluice } from './compiled-sluice.js';
import { ARTIFACTS, dashboardSuite, openPanel, TOKEN } from './dashboard-suite.js';
import { rawGet } from './own-connections.js';
import { send, serveArgs, spawnSluice } from './support.js';

const CHROMIUM = toolPath('chromium');

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

const held: ServerResponse[] = [];
const spawned: ChildProcess[] = [];
const suite = dashboardSuite({
  chromium: CHROMIUM,
  name: 'capacity',
  yaml: YAML,
  handler: (req, res) => {
    req.resume();
    held.push(res);
  },
  beforeClose: () => {
    for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const res of held.splice(0)) res.end();
  },
});
const { tmp, agent } = suite;
/** The command compiled from the sources once: a gateway of two threads starts faster than through tsx. */
let compiled: Awaited<ReturnType<typeof compiledSluice>>;
beforeAll(async () => {
  compiled = await compiledSluice();
});
afterAll(() => compiled?.remove());

describe('the dashboard capacity panel', () => {
  it('shows the overload limit, requests in flight, shed per second by priority, and in flight per policy', async () => {
    const { page, t, problems } = suite;
    await openPanel(page, `${t.gateway.adminUrl}/dashboard/`, '#capacity-card');
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
    const { page, problems } = suite;
    const adminPort = await freePort();
    const file = join(tmp.dir, 'capacity-threads.yaml');
    writeFileSync(
      file,
      'rateLimiting:\n  defaultTier: free\n  tiers:\n    free: { requestsPerMinute: 60000, burstLimit: 10000 }\n' +
        '  endpoints:\n    - { pattern: "/api/reports/*", name: reports, concurrent: 50 }\n' +
        `admin: { port: ${adminPort}, token: "${TOKEN}" }\n` +
        'server: { port: 1 }\nupstream: { url: "http://127.0.0.1:1" }\n',
    );
    const p = spawnSluice(process.execPath, serveArgs(file, suite.upstream.url, 2), spawned, compiled.bin);
    const { url } = JSON.parse(await p.waitFor(/sluice gateway listening/)) as { url: string };
    await p.waitFor(/"thread":1.*sluice gateway listening/);
    await openPanel(page, `http://127.0.0.1:${adminPort}/dashboard/`, '#capacity-card');
    // 16 requests, each on a connection of its own, so that the kernel spreads them over both threads.
    const running = Array.from({ length: 16 }, () => rawGet(url, '/api/reports/q').then(String));
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
