import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleForBrowser } from '../../test/client/bundle.js';
import { type RateLimitServer, startRateLimitServer } from '../../test/client/rate-limit-server.js';
import { ManualClock } from '../core/manual-clock.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'client');

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>status element</title>
<style>body { font-family: sans-serif; margin: 24px; } .themed { --sluice-status-background: #e8f0ff; }</style>
</head><body>
<header><sluice-rate-limit-status id="status" label="API quota"></sluice-rate-limit-status></header>
<p><acme-quota id="acme" class="themed"></acme-quota></p>
<script src="/status.js"></script>
</body></html>`;

declare global {
  interface Window {
    sluice: {
      createClient: typeof import('./client.js').createClient;
      defineRateLimitStatus: typeof import('./status-element.js').defineRateLimitStatus;
      ManualClock: typeof ManualClock;
    };
    clock: ManualClock;
    client: import('./client.js').SluiceClient;
  }
}

let server: RateLimitServer;
let context: BrowserContext;
let page: Page;
let profile: string;
const serverClock = new ManualClock(0);
const requested: string[] = [];

beforeAll(async () => {
  server = await startRateLimitServer(serverClock, [{ name: 'api', quota: 100, window: 60 }]);
  server.files.set('/', { type: 'text/html; charset=utf-8', body: PAGE });
  server.files.set('/status.js', {
    type: 'text/javascript; charset=utf-8',
    body: await bundleForBrowser(new URL('../../test/client/status-page-entry.ts', import.meta.url)),
  });
  profile = await mkdtemp(join(tmpdir(), 'sluice-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 640, height: 200 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('request', (r) => requested.push(new URL(r.url()).pathname));
  await page.goto(`${server.url}/`);
  await page.evaluate(() => {
    const { createClient, defineRateLimitStatus, ManualClock } = window.sluice;
    window.clock = new ManualClock(0);
    window.client = createClient({ clock: window.clock });
    defineRateLimitStatus();
    defineRateLimitStatus('acme-quota', { messages: { label: 'Acme API', warning: 'Running low' } });
    for (const id of ['status', 'acme']) {
      (document.getElementById(id) as HTMLElement & { client: unknown }).client = window.client;
    }
  });
}, 60_000);

afterAll(async () => {
  await context?.close();
  await server?.close();
  if (profile !== undefined) await rm(profile, { recursive: true, force: true });
});

/** Leaves `left` tokens in the server's bucket before the page's one request, which takes one more. */
async function serverLeaves(left: number): Promise<void> {
  await server.limiter.reset('client:1');
  if (left < 100) server.limiter.check('api', 'client:1', 100 - left);
  await page.evaluate(() => window.client.fetch('/api/items').then((r) => r.status));
}

const shadowText = (id: string, selector: string) =>
  page.evaluate(([i, s]) => document.getElementById(i)?.shadowRoot?.querySelector(s)?.textContent ?? null, [
    id,
    selector,
  ] as const);
const waitShadowText = (id: string, selector: string, text: string) =>
  page.waitForFunction(
    ([i, s, t]) => document.getElementById(i)?.shadowRoot?.querySelector(s)?.textContent === t,
    [id, selector, text] as const,
    { timeout: 20_000 },
  );
const level = (id: string) =>
  page.evaluate((i) => (document.getElementById(i) as HTMLElement & { level: string }).level, id);

describe('<sluice-rate-limit-status> in headless Chromium', () => {
  it('renders the remaining count and the countdown from a real response, and warns at 19%', async () => {
    await serverLeaves(20); // the page's request takes one: r=19 of q=100
    await waitShadowText('status', '.remaining', '19 of 100 left');
    // t = ceil(81 tokens / (100 per 60 s)) = 49 s until full
    expect(await shadowText('status', '.reset')).toBe('resets in 49 s');
    expect(await shadowText('status', '.label')).toBe('API quota');
    expect(await level('status')).toBe('warning');
    // Not colour alone: a visible text badge and icon.
    const cue = await page.evaluate(() => {
      const root = document.getElementById('status')?.shadowRoot;
      const badge = root?.querySelector('.badge') as HTMLElement;
      const icon = root?.querySelector('.icon') as HTMLElement;
      return {
        // biome-ignore lint/performance/useDomNodeTextContent: the rendered text (after CSS) is what is checked
        badge: badge.innerText,
        icon: getComputedStyle(icon).display !== 'none',
        live: root?.querySelector('[role=status]')?.textContent,
      };
    });
    expect(cue).toEqual({
      badge: 'LOW',
      icon: true,
      live: 'Approaching the rate limit: 19 of 100 requests left.',
    });
    expect(await shadowText('acme', '.label')).toBe('Acme API');
    expect(await shadowText('acme', '.badge')).toBe('Running low');

    await mkdir(ARTIFACTS, { recursive: true });
    const file = join(ARTIFACTS, 'rate-limit-status-warning.png');
    await page.screenshot({ path: file });
    expect((await stat(file)).size).toBeGreaterThan(1000);
  });

  it('counts down on the client clock and shows the reset', async () => {
    await page.evaluate(() => window.clock.advance(1000));
    await waitShadowText('status', '.reset', 'resets in 48 s');
    await page.evaluate(() => window.clock.advance(10_000));
    await waitShadowText('status', '.reset', 'resets in 38 s');
    expect(await shadowText('status', 'time')).toBe('38 s');
    await page.evaluate(() => window.clock.advance(38_000));
    await waitShadowText('status', '.reset', 'reset');
    // After t the quota is whole again, so the warning clears and the restoration is announced.
    expect(await shadowText('status', '.remaining')).toBe('100 of 100 left');
    expect(await level('status')).toBe('ok');
    expect(await shadowText('status', '[role=status]')).toBe('Rate limit no longer low.');
  });

  it('does not warn at 21%', async () => {
    await serverLeaves(22);
    await waitShadowText('status', '.remaining', '21 of 100 left');
    expect(await level('status')).toBe('ok');
    const badge = await page.evaluate(() => {
      const b = document.getElementById('status')?.shadowRoot?.querySelector('.badge') as HTMLElement;
      return { display: getComputedStyle(b).display, text: b.textContent };
    });
    expect(badge).toEqual({ display: 'none', text: '' });
    // Themed from the page through a CSS custom property.
    const background = await page.evaluate(() => {
      const c = document.getElementById('acme')?.shadowRoot?.querySelector('.status') as HTMLElement;
      return getComputedStyle(c).backgroundColor;
    });
    expect(background).toBe('rgb(232, 240, 255)');
    await page.screenshot({ path: join(ARTIFACTS, 'rate-limit-status-ok.png') });
  });

  it('shows exhaustion, and the warning level is 20% exclusive', async () => {
    await serverLeaves(1);
    await waitShadowText('status', '.badge', 'Limit reached');
    expect(await level('status')).toBe('exhausted');
    expect(await shadowText('status', '[role=status]')).toMatch(/^Rate limit reached\. It resets in 1:00\.$/);
    await serverLeaves(21);
    await waitShadowText('status', '.remaining', '20 of 100 left');
    expect(await level('status')).toBe('ok');
  });

  it('makes no request of its own: only the page, its script and the client calls', async () => {
    await page.evaluate(() => window.clock.advance(120_000));
    expect(new Set(requested)).toEqual(new Set(['/', '/status.js', '/api/items']));
    expect(requested.filter((p) => p === '/api/items')).toHaveLength(4);
  });
});
