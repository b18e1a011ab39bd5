import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CHROMIUM_ARGS, toolPath } from '../../../../test/support/tools.js';
import { bundleForBrowser } from '../../test/client/bundle.js';
import { type RateLimitServer, startRateLimitServer } from '../../test/client/rate-limit-server.js';
import type { PolicyOptions } from '../core/index.js';
import { ManualClock } from '../core/manual-clock.js';

const CHROMIUM = toolPath('chromium');
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
    pending: Promise<number> | undefined;
  }
}

interface ExampleTier {
  requestsPerMinute: number;
  requestsPerHour?: number;
  burstLimit: number;
}

/**
 * The tiers of the gateway's example configuration, as the gateway turns them into policies: a minute bucket of
 * the burst refilled at requestsPerMinute, and an hour bucket (`<tier>.hour`) of requestsPerHour.
 */
function examplePolicies(tier: string): PolicyOptions[] {
  const file = new URL('../../../gateway/examples/rate-limits.yaml', import.meta.url);
  const doc = parse(readFileSync(file, 'utf8')) as { rateLimiting: { tiers: Record<string, ExampleTier> } };
  const t = doc.rateLimiting.tiers[tier];
  const out: PolicyOptions[] = [{ name: tier, quota: t.requestsPerMinute, window: 60, burst: t.burstLimit }];
  if (t.requestsPerHour !== undefined) {
    out.push({ name: `${tier}.hour`, quota: t.requestsPerHour, window: 3600, burst: t.requestsPerHour });
  }
  return out;
}

const servers: RateLimitServer[] = [];
let context: BrowserContext;
let page: Page;
let profile: string;
let bundle: string;
const serverClock = new ManualClock(0);
const requested: string[] = [];

async function startTier(tier: string | PolicyOptions[]): Promise<RateLimitServer> {
  const policies = typeof tier === 'string' ? examplePolicies(tier) : tier;
  const server = await startRateLimitServer(serverClock, policies);
  server.files.set('/', { type: 'text/html; charset=utf-8', body: PAGE });
  server.files.set('/status.js', { type: 'text/javascript; charset=utf-8', body: bundle });
  // Chromium asks for a favicon on its own; served as a file it takes no token from the bucket under test.
  server.files.set('/favicon.ico', { type: 'image/x-icon', body: '' });
  servers.push(server);
  return server;
}

/** Opens the page of one tier's server with a fresh client on a fresh page clock. */
async function open(server: RateLimitServer): Promise<void> {
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
}

let standard: RateLimitServer;

beforeAll(async () => {
  bundle = await bundleForBrowser(new URL('../../test/client/status-page-entry.ts', import.meta.url));
  standard = await startTier('standard');
  profile = await mkdtemp(join(tmpdir(), 'sluice-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS],
    viewport: { width: 720, height: 200 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('request', (r) => requested.push(new URL(r.url()).pathname));
  await open(standard);
}, 60_000);

afterAll(async () => {
  await context?.close();
  for (const s of servers) await s.close();
  if (profile !== undefined) await rm(profile, { recursive: true, force: true });
});

/** Leaves `left` tokens in the standard minute bucket (a full hour bucket) before the page's next request. */
async function serverLeaves(left: number): Promise<void> {
  await standard.limiter.reset('client:1');
  if (left < 50) standard.limiter.check('standard', 'client:1', 50 - left);
}

const request = () => page.evaluate(() => window.client.fetch('/api/items').then((r) => r.status));

/** Time passes for the server and the page alike. */
async function advance(ms: number): Promise<void> {
  serverClock.advance(ms);
  await page.evaluate((m) => window.clock.advance(m), ms);
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

describe('<sluice-rate-limit-status> in headless Chromium, on the example tiers (burst below quota)', () => {
  it('after one standard request shows 49 of 50 left (the burst, not 300) and when the bucket is full', async () => {
    await serverLeaves(50);
    expect(await request()).toBe(200); // RateLimit-Policy: "standard";q=300;w=60 ... RateLimit: "standard";r=49;t=1
    await waitShadowText('status', '.remaining', '49 of 50 left');
    expect(await shadowText('status', '.full')).toBe('full in 1 s');
    // A request passes now, so there is no countdown to the next one.
    expect(await shadowText('status', '.next')).toBe('');
    expect(await level('status')).toBe('ok');
    expect(await shadowText('status', '.badge')).toBe('');
    expect(await page.evaluate(() => window.client.entries().map((e) => [e.policy, e.capacity]))).toEqual([
      ['standard', 50],
      ['standard.hour', 10_000],
    ]);
    await mkdir(ARTIFACTS, { recursive: true });
    const file = join(ARTIFACTS, 'rate-limit-status-ok.png');
    await page.screenshot({ path: file });
    expect((await stat(file)).size).toBeGreaterThan(1000);
  });

  it('one second later shows the bucket full: 50 of 50, never the quota of 300', async () => {
    await advance(1000);
    await waitShadowText('status', '.full', 'full');
    expect(await shadowText('status', '.remaining')).toBe('50 of 50 left');
    await advance(60_000);
    expect(await shadowText('status', '.remaining')).toBe('50 of 50 left');
  });

  it('when exhausted, names the next request in 1 s and the full bucket in 10 s, and the retry after 1 s passes', async () => {
    await serverLeaves(0);
    await page.evaluate(() => {
      window.pending = window.client.fetch('/api/items').then((r) => r.status);
    });
    // The 429 said r=0, t=10 and Retry-After: 1; one token takes 200 ms at 300 per minute.
    await waitShadowText('status', '.badge', 'Limit reached');
    expect(await shadowText('status', '.remaining')).toBe('0 of 50 left');
    expect(await shadowText('status', '.next')).toBe('next request in 1 s');
    expect(await shadowText('status', '.full')).toBe('full in 10 s');
    expect(await shadowText('status', '.next time')).toBe('1 s');
    expect(await level('status')).toBe('exhausted');
    expect(await shadowText('status', '[role=status]')).toBe(
      'Rate limit reached. The next request passes in 1 s.',
    );
    await page.screenshot({ path: join(ARTIFACTS, 'rate-limit-status-exhausted.png') });
    // The client waits out Retry-After on its clock, then its retry passes: the display said so.
    await advance(1000);
    expect(await page.evaluate(() => window.pending)).toBe(200);
    // 5 tokens came back in that second, the retry took one.
    await waitShadowText('status', '.remaining', '4 of 50 left');
    expect(await shadowText('status', '.next')).toBe('');
    expect(await shadowText('status', '.full')).toBe('full in 10 s');
    expect(await level('status')).toBe('warning');
  });

  it('warns below 20% of what the bucket holds, with a visible badge and icon: 9 of 50 warns, 10 of 50 does not', async () => {
    await serverLeaves(11);
    await request();
    await waitShadowText('status', '.remaining', '10 of 50 left');
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

    await serverLeaves(10);
    await request();
    await waitShadowText('status', '.remaining', '9 of 50 left');
    expect(await level('status')).toBe('warning');
    // Not colour alone: a visible text badge and icon.
    const cue = await page.evaluate(() => {
      const root = document.getElementById('status')?.shadowRoot;
      const b = root?.querySelector('.badge') as HTMLElement;
      const icon = root?.querySelector('.icon') as HTMLElement;
      return {
        // biome-ignore lint/performance/useDomNodeTextContent: the rendered text (after CSS) is what is checked
        badge: b.innerText,
        icon: getComputedStyle(icon).display !== 'none',
        live: root?.querySelector('[role=status]')?.textContent,
      };
    });
    expect(cue).toEqual({
      badge: 'LOW',
      icon: true,
      live: 'Approaching the rate limit: 9 of 50 requests left.',
    });
    expect(await shadowText('acme', '.label')).toBe('Acme API');
    expect(await shadowText('acme', '.badge')).toBe('Running low');
    await page.screenshot({ path: join(ARTIFACTS, 'rate-limit-status-warning.png') });
  });

  it('makes no request of its own: only the page, its script and the client calls', async () => {
    await advance(120_000);
    expect(new Set(requested)).toEqual(new Set(['/', '/status.js', '/api/items']));
    // One request, one 429 and its retry, and the two of the warning test.
    expect(requested.filter((p) => p === '/api/items')).toHaveLength(5);
  });

  it('knows the burst of the free and enterprise tiers too', async () => {
    for (const [tier, text, full] of [
      ['free', '9 of 10 left', 'full in 1 s'],
      ['enterprise', '199 of 200 left', 'full in 1 s'],
    ] as const) {
      await open(await startTier(tier));
      expect(await request()).toBe(200);
      await waitShadowText('status', '.remaining', text);
      expect(await shadowText('status', '.full')).toBe(full);
      expect(await level('status')).toBe('ok');
    }
  });
});

describe('<sluice-rate-limit-status> in headless Chromium, with a burst above the quota', () => {
  it('counts against the burst the headers show (50), not the quota per window (10), and warns below 20% of it', async () => {
    // Sluice accepts quota 10 per 60 s with bursts of 50 (requestsPerMinute: 10, burstLimit: 50 in the gateway).
    const big = await startTier([{ name: 'api', quota: 10, window: 60, burst: 50 }]);
    await open(big);
    expect(await request()).toBe(200); // "api";q=10;w=60 and "api";r=49;t=6
    await waitShadowText('status', '.remaining', '49 of 50 left');
    expect(await level('status')).toBe('ok');
    big.limiter.check('api', 'client:1', 4);
    expect(await request()).toBe(200); // r=44
    await waitShadowText('status', '.remaining', '44 of 50 left');
    big.limiter.check('api', 'client:1', 34);
    expect(await request()).toBe(200); // r=9: below 20% of 50, though 9 is most of a quota of 10
    await waitShadowText('status', '.remaining', '9 of 50 left');
    expect(await level('status')).toBe('warning');
    expect(await page.evaluate(() => window.client.entries().map((e) => [e.policy, e.capacity]))).toEqual([
      ['api', 50],
    ]);
  });
});
