import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CHROMIUM_ARGS, toolPath } from '../../../test/support/tools.js';
import { bundleForBrowser } from '../../sluice/test/client/bundle.js';
import { buildDemoPage } from '../demo-ui/build.js';
import { runDemo } from '../src/demo/run-demo.js';
import type { Gateway } from '../src/gateway/gateway.js';

const CHROMIUM = toolPath('chromium');

let assets: string;
let profile: string;
let context: BrowserContext;
let page: Page;
let demo: { gateway: Gateway; stop: () => Promise<void> };
const printed: string[] = [];
/** A deadline for what the page shows on a loaded machine, not a timed assertion. */
const WAIT = { timeout: 20_000, interval: 100 };

beforeAll(async () => {
  assets = await mkdtemp(join(tmpdir(), 'sluice-demo-page-'));
  await buildDemoPage(assets, { fromSource: true });
  demo = await runDemo({ port: 0, demoAssets: assets, print: (l) => printed.push(l) });
  profile = await mkdtemp(join(tmpdir(), 'sluice-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS],
    viewport: { width: 900, height: 600 },
  });
  page = context.pages()[0] ?? (await context.newPage());
}, 60_000);

afterAll(async () => {
  await context?.close();
  await demo?.stop();
  await rm(profile, { recursive: true, force: true });
  await rm(assets, { recursive: true, force: true });
});

it('sends a burst from another origin: the status element shows what is left and the client retries the 429s', async () => {
  const line = printed.find((l) => l.trimStart().startsWith('browser:'));
  expect(line).toBeDefined();
  const pageUrl = /(http:\/\/\S+\/demo\/)/.exec(line as string)?.[1] as string;
  // The page comes from the echo upstream's origin and calls the gateway's: every header it reads crosses CORS.
  expect(new URL(pageUrl).origin).not.toBe(new URL(demo.gateway.url).origin);
  await page.goto(pageUrl);
  await expect.poll(() => page.textContent('#gateway'), WAIT).toBe(demo.gateway.url);
  await page.click('#burst');
  // Ten pass (the endpoint rule's 10 per 60 s), each with a RateLimit field the page could read.
  await expect
    .poll(async () => (await page.locator('#log li', { hasText: ' 200 RateLimit: ' }).count()) >= 10, WAIT)
    .toBe(true);
  expect(await page.locator('#log li', { hasText: '(not readable)' }).count()).toBe(0);
  // The two refused calls are retried after the gateway's Retry-After, which the page could read.
  await expect.poll(() => page.locator('#log li.retry').count(), WAIT).toBeGreaterThanOrEqual(2);
  const retry = (await page.locator('#log li.retry').first().textContent()) as string;
  expect(retry).toMatch(/got 429: retry 1 in \d+ s \(Retry-After: \d+\)/);
  // The status element shows the most constrained policy: the endpoint rule, exhausted.
  const status = page.locator('#status');
  await page.screenshot({ path: join(process.cwd(), 'test-artifacts', 'demo-page.png') });
  await expect
    .poll(
      () =>
        status.evaluate(
          (el) => (el.shadowRoot as ShadowRoot).querySelector('[part=container]')?.textContent ?? '',
        ),
      WAIT,
    )
    .toContain('Limit reached');
  await page.screenshot({ path: join(process.cwd(), 'test-artifacts', 'demo-page.png') });
});

it("the client README's page, served from any other loopback origin, calls the demo gateway through CORS", async () => {
  // The README's steps: index.html beside the esm bundle, served by a static server of the reader's choice (its
  // port is not known to the demo), opened with ?api=<the gateway the demo prints>.
  const files: Record<string, [string, string]> = {
    '/index.html': [
      'text/html; charset=utf-8',
      readFileSync(new URL('../../../examples/browser/index.html', import.meta.url), 'utf8'),
    ],
    '/sluice-client.js': [
      'text/javascript; charset=utf-8',
      await bundleForBrowser(new URL('../../sluice/src/client/index.ts', import.meta.url), 'esm'),
    ],
  };
  const web = createServer((req, res) => {
    const file = files[(req.url ?? '').split('?')[0]];
    res.writeHead(file === undefined ? 404 : 200, { 'content-type': file?.[0] ?? 'text/plain' });
    res.end(file?.[1] ?? '');
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  try {
    const origin = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
    const tab = await context.newPage();
    await tab.goto(`${origin}/index.html?api=${demo.gateway.url}`);
    await tab.click('#send');
    // Each answer's RateLimit field was readable across origins (the demo's cors exposes it).
    await expect
      .poll(() => tab.locator('#log li', { hasText: /^200 RateLimit: "/ }).count(), WAIT)
      .toBeGreaterThanOrEqual(1);
    expect(await tab.locator('#log li', { hasText: 'RateLimit: null' }).count()).toBe(0);
    await expect
      .poll(
        () =>
          tab
            .locator('sluice-rate-limit-status')
            .evaluate(
              (el) => (el.shadowRoot as ShadowRoot).querySelector('[part=remaining]')?.textContent ?? '',
            ),
        WAIT,
      )
      .toMatch(/ of \d+ left/);
    await tab.close();
  } finally {
    // Chromium keeps its connections alive; close() alone would wait for them.
    web.closeAllConnections();
    await new Promise((r) => web.close(r));
  }
}, 60_000);
