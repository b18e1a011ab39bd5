import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { MemoryQuotaStore, QuotaTracker } from 'sluice/quota';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolPath } from '../../../test/support/tools.js';
import { openWatchedPage } from '../../../test/support/watched-page.js';
import { buildDashboard } from '../dashboard-ui/build.js';
import { Dashboard } from '../src/dashboard/index.js';
import { AdminServer } from '../src/server/admin-server.js';
import {
  client,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type TestUpstream,
  tempDir,
} from './support.js';

const CHROMIUM = toolPath('chromium');
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'dashboard');
const TOKEN = 'dashboard-admin-token-0123456789';
const LAPTOP = { width: 1440, height: 900 };
const PHONE = { width: 390, height: 844 };

const YAML = `rateLimiting:
  enabled: true
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60, requestsPerHour: 1000, burstLimit: 5 }
    standard: { requestsPerMinute: 300, requestsPerHour: 10000, burstLimit: 20 }
    enterprise: { requestsPerMinute: 1000, requestsPerHour: 50000, burstLimit: 200 }
  endpoints:
    - pattern: "/api/risk/simulation/*"
      limit: 30
      window: 60s
    - pattern: "/api/risk/simulation/studio/*"
      limit: 10
      window: 60s
    - pattern: "/system/airgap/seal"
      limit: 5
      window: 3600s
server: { trustedProxies: [loopback] }
identity:
  headers: {}
admin:
  port: 0
  token: \${ADMIN_TOKEN}
`;

const tmp = tempDir();
const agent = client();
let upstream: TestUpstream;
let t: TestGateway;
let admin: string;
let profile: string;
let context: BrowserContext;
let page: Page;
let problems: string[] = [];
let requested: string[] = [];

beforeAll(async () => {
  await buildDashboard();
  await mkdir(ARTIFACTS, { recursive: true });
  upstream = await startUpstream();
  t = await startGateway(join(tmp.dir, 'dashboard.yaml'), {
    yaml: YAML,
    env: { ADMIN_TOKEN: TOKEN },
    overrides: { upstream: upstream.url },
  });
  admin = t.gateway.adminUrl as string;
  profile = await mkdtemp(join(tmpdir(), 'sluice-dashboard-chromium-'));
  ({ context, page, problems, requested } = await openWatchedPage(CHROMIUM, profile, LAPTOP));
}, 60_000);

afterAll(async () => {
  await context?.close();
  await t?.gateway.close();
  await upstream?.close();
  await agent.close();
  if (profile !== undefined) await rm(profile, { recursive: true, force: true });
  tmp.cleanup();
});

/** One second of traffic through the gateway, then the gateway's clock moves on by a second. */
async function loadOneSecond(round: number): Promise<void> {
  const gw = t.gateway.url;
  const jobs: Promise<unknown>[] = [];
  const as = (tenant: string, tier: string) => ({
    'x-tenant-id': tenant,
    'x-client-id': 'web',
    'x-rate-limit-tier': tier,
  });
  for (let i = 0; i < 12 + round * 3; i++)
    jobs.push(send(agent, `${gw}/orders/${i}`, { headers: as('acme', 'enterprise') }));
  for (let i = 0; i < 25; i++)
    jobs.push(send(agent, `${gw}/api/risk/simulation/run`, { headers: as('globex', 'standard') }));
  // The longest policy name of the example configuration, for the layout: a key of its own, never limited.
  if (round === 1)
    jobs.push(send(agent, `${gw}/api/risk/simulation/studio/run`, { headers: as('initech', 'enterprise') }));
  for (let i = 0; i < 8; i++) jobs.push(send(agent, `${gw}/public/${i}`));
  for (let i = 0; i < 3; i++) jobs.push(send(agent, `${gw}/health`));
  await Promise.all(jobs);
  t.clock.advance(1000);
}

const text = async (selector: string) => (await page.locator(selector).textContent()) ?? '';
const chartPixels = () =>
  page.evaluate(() => (document.querySelector('#chart canvas') as HTMLCanvasElement).toDataURL());

describe('dashboard', () => {
  it('serves the page without the token but refuses its data, and a wrong token unlocks nothing', async () => {
    await page.goto(`${admin}/dashboard/`);
    await page.locator('#locked').waitFor({ state: 'visible' });
    expect(await page.locator('#app').isHidden()).toBe(true);
    expect(await text('#connection')).toBe('Locked');
    // The data routes and the admin API stay closed without the token.
    expect((await send(agent, `${admin}/dashboard/events`)).status).toBe(401);
    expect((await send(agent, `${admin}/dashboard/state`)).status).toBe(401);
    expect((await send(agent, `${admin}/config`)).status).toBe(401);
    await page.fill('#token', 'not-the-token');
    await page.click('button[type=submit]');
    await page.waitForFunction(() =>
      document.getElementById('token-error')?.textContent?.includes('refused'),
    );
    expect(await page.locator('#app').isHidden()).toBe(true);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    // The refused call is the only thing the browser reports (as a failed resource load).
    expect(problems).toEqual([
      'error: Failed to load resource: the server responded with a status of 401 (Unauthorized)',
    ]);
    problems.length = 0;
    await page.screenshot({ path: join(ARTIFACTS, 'locked-laptop.png') });
  });

  it('unlocks with the token, kept in session storage and never in a URL', async () => {
    await page.fill('#token', TOKEN);
    await page.click('button[type=submit]');
    await page.waitForFunction(() => document.getElementById('connection')?.textContent === 'Live');
    expect(await page.locator('#app').isVisible()).toBe(true);
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([TOKEN]);
    expect(requested.some((u) => u.includes(TOKEN))).toBe(false);
    expect(page.url()).toBe(`${admin}/dashboard/`);
    // The effective configuration, readable.
    const config = await text('#config');
    for (const s of [
      'enterprise',
      '/api/risk/simulation/*',
      '30 / 1 min',
      '5 / 1 h',
      'GET /health',
      'identity headers',
    ]) {
      expect(config).toContain(s);
    }
    // A reload keeps the session: the page reconnects without asking again.
    await page.reload();
    await page.waitForFunction(() => document.getElementById('connection')?.textContent === 'Live');
  });

  it('moves numbers and chart while load goes through the gateway', async () => {
    const before = await chartPixels();
    // Allowed and limited requests of each second, exact because the gateway's clock is a ManualClock: acme
    // (enterprise, burst 200) is always allowed; globex (standard: 5/s after a burst of 20) also drains the
    // endpoint rule (30 per 60 s), which denies it from round 4; anonymous clients get the free tier (1/s after 5).
    const expected = [
      [41, 8],
      [24, 27],
      [27, 27],
      [26, 31],
    ];
    const pixels = new Set([before]);
    for (let round = 1; round <= 4; round++) {
      await loadOneSecond(round);
      const [allowed, limited] = expected[round - 1];
      await page.waitForFunction(
        ([a, l]) =>
          document.getElementById('kpi-allowed')?.textContent === String(a) &&
          document.getElementById('kpi-limited')?.textContent === String(l),
        [allowed, limited],
        { timeout: 10_000 },
      );
      pixels.add(await chartPixels());
    }
    // The chart was redrawn with new data every second.
    expect(pixels.size).toBe(5);
    // Per second: acme (enterprise, burst 200) always allowed; globex limited by the endpoint rule (30 burst)
    // after its first round; anonymous clients (free, burst 5) limited after 5; /health exempt.
    expect(await text('#kpi-exempt')).toBe('3');
    expect(await text('#kpi-allowed-min')).toBe('118 in 60 s');
    expect(await page.locator('#chart').getAttribute('aria-label')).toMatch(
      /last second: allowed \d+, limited \d+, exempt 3/,
    );
    const policies = await text('#policies');
    for (const p of ['/api/risk/simulation/*', 'enterprise', 'free', 'standard.hour'])
      expect(policies).toContain(p);
    // Top limited keys: what each key is (kind, tenant and client or address, tier, policy, last seen).
    await page.waitForSelector('#top-keys-table tbody tr[data-key="tenant:globex:client:web"]');
    const globex =
      (await page.locator('#top-keys-table tr[data-key="tenant:globex:client:web"]').textContent()) ?? '';
    for (const s of ['tenant-client', 'globex / web', 'standard', '/api/risk/simulation/*'])
      expect(globex).toContain(s);
    // Last seen: by the gateway's wall clock (fixed in tests) against the browser's.
    expect(globex).toMatch(/\d+ (s|min) ago/);
    const anonymous = (await page.locator('#top-keys-table tr[data-key="ip:127.0.0.1"]').textContent()) ?? '';
    for (const s of ['address', '127.0.0.1', 'free']) expect(anonymous).toContain(s);
    // Store health: memory, tracked keys against the cap.
    const store = await text('#store');
    expect(store).toContain('memory');
    expect(store).toMatch(/Tracked keys\s*[\d,]+ of [\d,]+/);
    expect(await text('#store-badge')).toBe('Healthy');
    // The view picker offers tiers and policies; a policy view relabels the chart.
    await page.selectOption('#view', 'policy:/api/risk/simulation/*');
    await page.waitForFunction(() =>
      document.querySelector('.u-legend')?.textContent?.includes('Denied by other'),
    );
    await page.selectOption('#view', 'all');
    await page.screenshot({ path: join(ARTIFACTS, 'live-laptop.png'), fullPage: true });
  });

  it('exposes names and roles to assistive technology', async () => {
    const tree = await page.locator('body').ariaSnapshot();
    for (const line of [
      'banner',
      'main',
      'status: Live',
      'heading "Requests per second" [level=2]',
      'combobox "View"',
      /img "All requests per second over the last \d+ minutes; last second: allowed \d+, limited \d+, exempt \d+"/,
      'table "Decisions per policy and tier over the last 60 seconds"',
      'table "Keys denied most often"',
      'textbox "Key"',
      'button "Inspect"',
      'button "Reset key"',
      'button "Forget token"',
      'heading "Effective configuration" [level=2]',
    ]) {
      if (typeof line === 'string') expect(tree).toContain(line);
      else expect(tree).toMatch(line);
    }
    // Every form control has a label.
    const unlabelled = await page.evaluate(() =>
      [...document.querySelectorAll('input, select, button')]
        .filter((e) => (e as HTMLElement).offsetParent !== null)
        .filter((e) => {
          const el = e as HTMLInputElement;
          return (
            (el.labels?.length ?? 0) === 0 &&
            (el.textContent ?? '').trim() === '' &&
            !el.getAttribute('aria-label')
          );
        })
        .map((e) => e.id),
    );
    expect(unlabelled).toEqual([]);
  });

  it('inspects and resets a key through the admin API', async () => {
    await page.fill('#key', 'ip:127.0.0.1');
    await page.click('#inspect');
    await page.waitForSelector('#inspect-table tbody tr');
    const free = page
      .locator('#inspect-table tbody tr')
      .filter({ has: page.locator('td:first-child', { hasText: /^free$/ }) });
    // One second has passed since the last load: the bucket (1 per second) holds one token.
    expect(await free.textContent()).toMatch(/1 of 5/);
    await page.click('#reset');
    await page.waitForFunction(() =>
      document.getElementById('inspect-status')?.textContent?.includes('was reset'),
    );
    expect(await free.textContent()).toMatch(/5 of 5/);
    // The gateway agrees: the key's free bucket is full again.
    const view = (
      await send(agent, `${admin}/keys/${encodeURIComponent('ip:127.0.0.1')}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      })
    ).json<{ buckets: { policy: string; remaining: number }[] }>();
    expect(view.buckets.find((b) => b.policy === 'free')?.remaining).toBe(5);
  });

  it('reads well at phone width', async () => {
    await page.setViewportSize(PHONE);
    await page.waitForFunction(
      () => (document.querySelector('#chart canvas') as HTMLCanvasElement).clientWidth <= 390,
    );
    // Nothing wider than the screen: wide tables scroll inside their own box.
    const wide = await page.evaluate(() =>
      [...document.querySelectorAll('body *')]
        .filter(
          (e) =>
            e.getBoundingClientRect().right > window.innerWidth + 0.5 &&
            !e.parentElement?.closest('.table-wrap'),
        )
        .map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`),
    );
    expect(wide).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(ARTIFACTS, 'live-phone-top.png') });
    await page.locator('#inspect-title').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(ARTIFACTS, 'live-phone-inspect.png') });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(ARTIFACTS, 'live-phone.png'), fullPage: true });
    await page.setViewportSize(LAPTOP);
  });

  it('fits the policies table in its panel at 1280 px, every column shown', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.waitForSelector('#policies tbody tr');
    const fit = await page.evaluate(() => {
      const table = document.getElementById('policies') as HTMLTableElement;
      const wrap = table.closest('.table-wrap') as HTMLElement;
      const last = table.querySelector('thead th:last-child') as HTMLElement;
      return {
        table: table.scrollWidth,
        wrap: wrap.clientWidth,
        lastRight: last.getBoundingClientRect().right,
        wrapRight: wrap.getBoundingClientRect().right,
      };
    });
    expect(fit.table).toBeLessThanOrEqual(fit.wrap);
    expect(fit.lastRight).toBeLessThanOrEqual(fit.wrapRight + 0.5);
    await page.setViewportSize(LAPTOP);
  });

  it('forgets the token on request and logged no console error', async () => {
    await page.click('#lock');
    await page.waitForFunction(() => document.getElementById('connection')?.textContent === 'Locked');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(await page.locator('#app').isHidden()).toBe(true);
    // Every request of the page went to the admin listener itself: nothing from a CDN.
    expect(requested.every((u) => u.startsWith(admin))).toBe(true);
    expect(problems).toEqual([]);
  });

  it('shows top tenants by quota usage with the alert thresholds marked', async () => {
    const quota = new QuotaTracker({
      store: new MemoryQuotaStore(),
      quotas: { acme: 1000, globex: 400, initech: 2000 },
      flushIntervalMs: 0,
    });
    quota.record('acme', 'orders', 640);
    quota.record('globex', 'risk', 380);
    quota.record('initech', 'orders', 200);
    const g = t.gateway;
    const server = new AdminServer(
      g,
      TOKEN,
      new Dashboard(g, { rates: g.rates, topLimitedKeys: g.topLimitedKeys, quota }),
    );
    const port = await server.listen('127.0.0.1', 0);
    try {
      const p = await context.newPage();
      p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      await p.goto(`http://127.0.0.1:${port}/dashboard/`);
      await p.fill('#token', TOKEN);
      await p.click('button[type=submit]');
      await p.waitForSelector('#top-tenants-table tbody tr');
      const rows = await p.locator('#top-tenants-table tbody tr').allInnerTexts();
      expect(rows.map((r) => r.split(/\s+/)[0])).toEqual(['acme', 'globex', 'initech']);
      expect(rows[1]).toContain('95%');
      // Two thresholds (80% and 100%) marked on every bar; globex is past 80% (warn), initech well below (ok).
      expect(await p.locator('#top-tenants-table .bar-marker').count()).toBe(6);
      expect(
        await p.locator('#top-tenants-table tbody tr').nth(1).locator('.bar-fill').getAttribute('class'),
      ).toContain('tone-warn');
      expect(
        await p.locator('#top-tenants-table tbody tr').nth(2).locator('.bar-fill').getAttribute('class'),
      ).toContain('tone-ok');
      await p.screenshot({ path: join(ARTIFACTS, 'quota-laptop.png'), fullPage: true });
      await p.close();
    } finally {
      await server.close();
      await quota.close();
    }
    expect(problems).toEqual([]);
  });
  it('lists overrides and blocks with moving countdowns, and removes one only after confirmation', async () => {
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const put = (body: unknown) =>
      send(agent, `${admin}/overrides`, { method: 'PUT', headers, body: JSON.stringify(body) });
    const listed = async () =>
      (await send(agent, `${admin}/overrides`, { headers })).json<{ overrides: { id: string }[] }>()
        .overrides;
    expect(
      (await put({ pattern: 'tenant:acme', tier: 'enterprise', quota: 5000, window: 60, reason: 'launch' }))
        .status,
    ).toBe(200);
    expect(
      (await put({ pattern: 'ip:192.0.2.0/24', block: 429, ttlSeconds: 125, reason: 'scraper' })).status,
    ).toBe(200);
    const p = await context.newPage();
    p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    await p.goto(`${admin}/dashboard/`);
    await p.fill('#token', TOKEN);
    await p.click('button[type=submit]');
    await p.waitForSelector('#overrides-table tbody tr');
    const rows = await p.locator('#overrides-table tbody tr').allInnerTexts();
    expect(rows).toHaveLength(2);
    const limit = rows.find((r) => r.includes('tenant:acme')) ?? '';
    for (const s of ['tier enterprise', '5000 / 60 s, burst 5000', 'no end', 'admin: launch'])
      expect(limit).toContain(s);
    const block = p.locator('#overrides-table tr[data-effect=block]');
    expect(await block.textContent()).toContain('Block 429');
    const cell = block.locator('td.countdown');
    const first = (await cell.textContent()) ?? '';
    expect(first).toMatch(/^2 min 0[0-5] s$/);
    // The countdown moves on the browser's clock, without a fetch (polled, never slept).
    await p.waitForFunction(
      (prev) =>
        document.querySelector('#overrides-table tr[data-effect=block] td.countdown')?.textContent !== prev,
      first,
      { timeout: 5000 },
    );
    // Dismissing the confirmation removes nothing.
    p.once('dialog', (d) => void d.dismiss());
    await block.locator('button').click();
    expect(await listed()).toHaveLength(2);
    let asked = '';
    p.once('dialog', (d) => {
      asked = d.message();
      void d.accept();
    });
    await block.locator('button').click();
    await p.waitForFunction(() => document.querySelectorAll('#overrides-table tbody tr').length === 1);
    expect(asked).toContain('ip:192.0.2.0/24');
    expect((await listed()).map((o) => o.id)).toEqual(['tenant:acme tier=enterprise']);
    const history = (await send(agent, `${admin}/overrides/history`, { headers })).json<{
      changes: { action: string; reason: string; who: string }[];
    }>().changes;
    expect(history.at(-1)).toMatchObject({
      action: 'remove',
      who: 'admin',
      reason: 'removed from the dashboard',
    });
    await p.screenshot({ path: join(ARTIFACTS, 'overrides-laptop.png'), fullPage: true });
    await p.close();
    expect(problems).toEqual([]);
  });
  it('acts on a top limited key: inspect, reset, override and block, each change asked first', async () => {
    const headers = { authorization: `Bearer ${TOKEN}` };
    // The rules on this key (an earlier test left one on another).
    const rules = async () =>
      (await send(agent, `${admin}/overrides`, { headers }))
        .json<{ overrides: { pattern: string; effect: string; quota?: number }[] }>()
        .overrides.filter((r) => r.pattern === 'tenant:globex:client:web');
    // The main page forgot its token in an earlier test: a page of its own.
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    await page.goto(`${admin}/dashboard/`);
    await page.fill('#token', TOKEN);
    await page.click('button[type=submit]');
    const text = async (selector: string) => (await page.locator(selector).textContent()) ?? '';
    const row = page.locator('#top-keys-table tr[data-key="tenant:globex:client:web"]');
    await row.waitFor();
    await row.locator('button[data-action=inspect]').click();
    await page.waitForFunction(() =>
      document.getElementById('inspect-status')?.textContent?.includes('tenant:globex:client:web'),
    );
    expect(await text('#inspect-result')).toContain('/api/risk/simulation/*');
    // A dismissed confirmation changes nothing; an accepted one resets.
    page.once('dialog', (d) => void d.dismiss());
    await row.locator('button[data-action=reset]').click();
    expect(await text('#inspect-status')).not.toContain('was reset');
    page.once('dialog', (d) => void d.accept());
    await row.locator('button[data-action=reset]').click();
    await page.waitForFunction(() =>
      document.getElementById('inspect-status')?.textContent?.includes('was reset'),
    );
    // Override: the prompt asks for the rate (cancelling sets nothing).
    page.once('dialog', (d) => void d.dismiss());
    await row.locator('button[data-action=override]').click();
    expect(await rules()).toEqual([]);
    page.once('dialog', (d) => {
      expect(d.type()).toBe('prompt');
      void d.accept('1200');
    });
    await row.locator('button[data-action=override]').click();
    await page.waitForFunction(() =>
      document.getElementById('inspect-status')?.textContent?.includes('Override set'),
    );
    expect(await rules()).toMatchObject([
      { pattern: 'tenant:globex:client:web', effect: 'limit', quota: 1200 },
    ]);
    page.once('dialog', (d) => void d.accept());
    await row.locator('button[data-action=block]').click();
    await page.waitForFunction(() =>
      document.getElementById('inspect-status')?.textContent?.includes('is blocked'),
    );
    // One rule per key and scope: the block replaces the override.
    expect(await rules()).toMatchObject([{ pattern: 'tenant:globex:client:web', effect: 'block' }]);
    // The panel of overrides and blocks shows the block at its next read.
    await page.waitForFunction(
      () => document.querySelectorAll('#overrides-table tr[data-effect=block]').length === 1,
      undefined,
      {
        timeout: 10_000,
      },
    );
    await page.screenshot({ path: join(ARTIFACTS, 'key-actions-laptop.png'), fullPage: true });
    await page.close();
    expect(problems).toEqual([]);
  });
});
