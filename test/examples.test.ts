import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import type { HttpLimiter } from 'sluice/http';
import { describe, expect, it } from 'vitest';
import { bundleForBrowser } from '../packages/sluice/test/client/bundle.js';
import { toolPath } from './support/tools.js';

// The quick starts of the README, run as they are: each imports the `sluice` package names as a user would
// (vitest resolves them to the sources), listens, and must answer 5 requests then a 429 on /api/hello.

interface Started {
  readonly url: string;
  close(): Promise<unknown>;
}

/**
 * Loads an example by its file name. The examples are plain `.mjs` files a user runs with `node`; vitest still
 * transforms them, so their `sluice/...` imports resolve to the sources.
 */
function example<T>(file: string): Promise<T> {
  return import(/* @vite-ignore */ new URL(`../examples/${file}`, import.meta.url).href) as Promise<T>;
}

type ServerExample = { start: (port?: number) => Promise<Started> };
const SERVERS = ['express', 'fastify', 'hono', 'node-http'];

describe.each(SERVERS)('examples/%s.mjs', (name) => {
  it('admits the burst of 5 on /api/*, then answers 429 with Retry-After and the RateLimit fields', async () => {
    const app = await (await example<ServerExample>(`${name}.mjs`)).start(0);
    try {
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 6; i++) {
        last = await fetch(`${app.url}/api/hello`);
        statuses.push(last.status);
        await last.arrayBuffer();
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      const refused = last as Response;
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.headers.get('ratelimit-policy')).toBe('"api";q=60;w=60');
      expect(refused.headers.get('ratelimit')).toBe('"api";r=0;t=5');
    } finally {
      await app.close();
    }
  });
});

describe.each(SERVERS)('examples/%s.mjs with its port taken', (name) => {
  it('rejects with the listen error (EADDRINUSE), as node prints it', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as AddressInfo).port;
    try {
      const { start } = await example<ServerExample>(`${name}.mjs`);
      await expect(start(port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });
});

it('examples/fastify.mjs says it needs fastify-plugin, and so does the README', () => {
  const example = readFileSync(new URL('../examples/fastify.mjs', import.meta.url), 'utf8');
  expect(example.split('\n')[0]).toContain('npm install fastify fastify-plugin');
  const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
  const row = readme.split('\n').find((l) => l.startsWith('| [examples/fastify.mjs]'));
  expect(row).toContain('fastify-plugin');
});

describe('examples/engine.mjs', () => {
  it('prints the burst, the refusal and the refill', async () => {
    const { tour } = await example<{ tour: () => Promise<string[]> }>('engine.mjs');
    expect(await tour()).toEqual([
      'first request: allow r=29 t=1',
      '30th request: allow r=0 t=15',
      '31st request: deny r=0 t=15 Retry-After: 1',
      'after 0.5 s: allow r=0 t=15',
    ]);
  });
});

describe('examples/limits.mjs', () => {
  it("limits '/api' and '/api/' with the '/api/*' rule, as its comment says", async () => {
    const { createLimits } = await example<{ createLimits: () => HttpLimiter }>('limits.mjs');
    const http = createLimits();
    for (const path of ['/api', '/api/', '/api/hello/x']) {
      const v = await http.evaluate({ method: 'GET', path, headers: {}, remoteAddress: '192.0.2.1' });
      expect(v.action, path).toBe('allow');
      expect(
        v.decision?.outcomes.map((o) => o.policy.name),
        path,
      ).toEqual(['api']);
    }
    const other = await http.evaluate({
      method: 'GET',
      path: '/apis',
      headers: {},
      remoteAddress: '192.0.2.1',
    });
    expect(other.action).toBe('exempt');
  });
});

describe('examples/browser/index.html', () => {
  it('shows the status element and the retries against the node:http quick start', async () => {
    const { createLimits } = await example<{ createLimits: () => HttpLimiter }>('limits.mjs');
    const { withRateLimit } = await import('sluice/node');
    const page = readFileSync(new URL('../examples/browser/index.html', import.meta.url), 'utf8');
    const bundle = await bundleForBrowser(
      new URL('../packages/sluice/src/client/index.ts', import.meta.url),
      'esm',
    );
    const files: Record<string, [string, string]> = {
      '/': ['text/html; charset=utf-8', page],
      '/sluice-client.js': ['text/javascript; charset=utf-8', bundle],
    };
    const server = createServer(
      withRateLimit(createLimits(), (req, res) => {
        const file = files[req.url ?? ''];
        res.writeHead(200, { 'content-type': file?.[0] ?? 'application/json' });
        res.end(file?.[1] ?? '{"hello":"world"}');
      }),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const browser = await chromium.launch({
      executablePath: toolPath('chromium'),
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    try {
      const tab = await browser.newPage();
      await tab.goto(url);
      await tab.click('#send');
      await expect.poll(() => tab.locator('#log li', { hasText: '200 RateLimit: "api";r=' }).count()).toBe(5);
      await expect.poll(() => tab.locator('#log li', { hasText: '429: retry 1 in 1 s' }).count()).toBe(1);
      const status = tab.locator('sluice-rate-limit-status');
      await expect
        .poll(() =>
          status.evaluate((el) => el.shadowRoot?.querySelector('[part=container]')?.textContent ?? ''),
        )
        .toMatch(/of 5 left/);
    } finally {
      await browser.close();
      await new Promise((r) => server.close(r));
    }
  });
});

// Keeps the README honest about what the quick starts are.
it('every quick start named in the README exists', () => {
  const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
  for (const f of [
    'express.mjs',
    'fastify.mjs',
    'hono.mjs',
    'node-http.mjs',
    'engine.mjs',
    'browser/index.html',
  ]) {
    expect(readme).toContain(`examples/${f}`);
  }
});
