import { createReadStream, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateLog } from '../../../bench/replay/generate-log.js';
import { toolPath } from '../../../test/support/tools.js';
import { openWatchedPage } from '../../../test/support/watched-page.js';
import { buildReplayPage } from '../replay-ui/build.js';
import { loadConfigText } from '../src/config/load-config.js';
import { replayReport } from '../src/replay/replay-report.js';
import { runReplay } from '../src/replay/replay-run.js';
import { replayHtml } from '../src/replay/report-html.js';

const CHROMIUM = toolPath('chromium');
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'replay-report');
const EXAMPLE = readFileSync(new URL('../examples/rate-limits.yaml', import.meta.url), 'utf8');

let dir: string;
let context: BrowserContext;
let page: Page;
let html: string;
let problems: string[] = [];
let requested: string[] = [];

const config = (text: string) => {
  const r = loadConfigText(text, 'x.yaml', { env: {} });
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
};

beforeAll(async () => {
  await buildReplayPage();
  await mkdir(ARTIFACTS, { recursive: true });
  dir = await mkdtemp(join(tmpdir(), 'sluice-replay-report-'));
  const log = join(dir, 'access.log');
  await generateLog(log, 60_000, 3_000, 1800, 3);
  const run = await runReplay({
    config: { name: 'rate-limits.yaml', config: config(EXAMPLE) },
    against: {
      name: 'stricter.yaml',
      config: config(EXAMPLE.replace('requestsPerMinute: 300', 'requestsPerMinute: 120')),
    },
    logs: [{ name: 'access.log', open: () => createReadStream(log) }],
  });
  html = replayHtml(replayReport(run));
  await writeFile(join(dir, 'report.html'), html);
  ({ context, page, problems, requested } = await openWatchedPage(CHROMIUM, join(dir, 'profile'), {
    width: 1280,
    height: 900,
  }));
}, 120_000);

afterAll(async () => {
  await context?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('the HTML replay report', () => {
  it('is one file with no reference to another file or origin', () => {
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href="(?!data:)/);
    expect(html).toContain('<script type="application/json" id="replay-data">{');
  });

  it('opens from a file and shows the totals, the chart over time per policy, the tables and the flips', async () => {
    const url = pathToFileURL(join(dir, 'report.html')).href;
    await page.goto(url);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
    expect(await page.locator('#kpis').textContent()).toMatch(/Requests60,000Allowed[\d,]+Limited[\d,]+/);
    expect(await page.locator('#chart canvas').count()).toBe(1);
    const before = await page.evaluate(() =>
      (document.querySelector('#chart canvas') as HTMLCanvasElement).toDataURL(),
    );
    const options = await page.locator('#view option').allTextContents();
    expect(options).toEqual(
      expect.arrayContaining(['All requests', 'Policy standard', 'Policy /system/airgap/seal']),
    );
    await page.selectOption('#view', { label: 'Policy /system/airgap/seal' });
    const after = await page.evaluate(() =>
      (document.querySelector('#chart canvas') as HTMLCanvasElement).toDataURL(),
    );
    expect(after).not.toBe(before);
    expect(await page.locator('#policies tbody tr').count()).toBeGreaterThanOrEqual(4);
    expect(await page.locator('#keys tbody tr').count()).toBe(10);
    expect(await page.locator('#against-card').isVisible()).toBe(true);
    expect(await page.locator('#against-summary').textContent()).toMatch(
      /^[\d,]+ requests allowed by rate-limits\.yaml are limited by stricter\.yaml/,
    );
    // The other configuration's own numbers, not only the flips.
    expect(await page.locator('#against-kpis').textContent()).toMatch(
      /Requests60,000Allowed[\d,]+Limited[\d,]+/,
    );
    expect(await page.locator('#against-policies-title').textContent()).toBe('Policies under stricter.yaml');
    expect(await page.locator('#against-policies tbody tr').count()).toBeGreaterThanOrEqual(4);
    expect(await page.locator('#against-tiers tbody tr').count()).toBeGreaterThanOrEqual(1);
    expect(await page.locator('#flip-keys tbody tr').count()).toBeGreaterThanOrEqual(1);
    // Nothing to warn about in a clean log.
    expect(await page.locator('#notices-card').isVisible()).toBe(false);
    await page.selectOption('#view', 'all');
    await page.screenshot({ path: join(ARTIFACTS, 'replay-report.png'), fullPage: true });
    expect(requested.filter((u) => u !== url && !u.startsWith('data:'))).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('says what to read with care: requests without a client, a penalty section it does not replay', async () => {
    const log = join(dir, 'edge.log');
    await writeFile(
      log,
      `- - - [03/Dec/2026:06:00:00 +0000] "GET /api/x HTTP/1.1" 200 1 "-" "t"\n`.repeat(3),
    );
    const withPenalty = `${EXAMPLE}penalty:\n  after: 3\n  within: 60s\n  block: 10m\n`;
    const run = await runReplay({
      config: { name: 'penalty.yaml', config: config(withPenalty) },
      logs: [{ name: 'edge.log', open: () => createReadStream(log) }],
    });
    await writeFile(join(dir, 'edge.html'), replayHtml(replayReport(run)));
    await page.goto(pathToFileURL(join(dir, 'edge.html')).href);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
    expect(await page.locator('#notices-card').isVisible()).toBe(true);
    const text = await page.locator('#notices').textContent();
    expect(text).toContain('3 requests had no client address: all were decided as one client, ip:unknown');
    expect(text).toContain('penalty.yaml has a penalty: section, which replay does not apply');
    expect(problems).toEqual([]);
  });
});
