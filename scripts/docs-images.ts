/**
 * `npm run docs:images`: the README's pictures, taken from the real UI. Starts the demo gateway (the example
 * configuration on the memory store), drives some load through it, and has headless Chromium screenshot the
 * dashboard and the status element of the browser demo in its states (requests left, low, limit reached).
 * Writes docs/images/dashboard.png, docs/images/status-states.png and docs/images/replay-report.png (the page of
 * `sluice replay --html`; `npm run docs:images -- replay` takes that one alone).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { buildDashboard } from '../packages/gateway/dashboard-ui/build.js';
import { buildDemoPage } from '../packages/gateway/demo-ui/build.js';
import { runDemo } from '../packages/gateway/src/demo/run-demo.js';
import { CHROMIUM_ARGS, toolPath } from '../test/support/tools.js';
import { replayReportImage } from './replay-image.js';

const OUT = fileURLToPath(new URL('../docs/images/', import.meta.url));

if (process.argv.slice(2).includes('replay')) {
  mkdirSync(OUT, { recursive: true });
  const b = await chromium.launch({ executablePath: toolPath('chromium'), args: [...CHROMIUM_ARGS] });
  try {
    console.log(`docs images: ${await replayReportImage(b, OUT)}`);
  } finally {
    await b.close();
  }
  process.exit(0);
}

await buildDashboard();
await buildDemoPage(undefined, { fromSource: true });
mkdirSync(OUT, { recursive: true });
const printed: string[] = [];
const demo = await runDemo({ port: 0, print: (l) => printed.push(l) });
const token = /\(token (\S+)\)/.exec(printed.join('\n'))?.[1] as string;
const pageUrl = /browser:\s+(\S+)/.exec(printed.join('\n'))?.[1] as string;
const gw = demo.gateway.url;
const browser = await chromium.launch({ executablePath: toolPath('chromium'), args: [...CHROMIUM_ARGS] });

/** Bounded load on loopback: a few hundred requests over the example's tiers and endpoint rules. */
async function load(rounds: number): Promise<void> {
  const paths = [
    '/api/items',
    '/api/risk/simulation/run',
    '/api/risk/simulation/studio/run',
    '/system/airgap/seal',
  ];
  for (let i = 0; i < rounds; i++) {
    await Promise.all(paths.map((p) => fetch(`${gw}${p}?i=${i}`).then((r) => r.arrayBuffer())));
  }
}

async function statusShot(page: Page, file: string): Promise<string> {
  const path = join(OUT, '.parts', file);
  await page.locator('#status').screenshot({ path });
  return path;
}

try {
  // The status element's states, from the browser demo page (the endpoint rule of 10 per 60 s).
  const demoPage = await browser.newPage({ viewport: { width: 900, height: 200 }, deviceScaleFactor: 2 });
  await demoPage.goto(pageUrl);
  mkdirSync(join(OUT, '.parts'), { recursive: true });
  const text = () => demoPage.locator('#status').evaluate((el) => el.shadowRoot?.textContent ?? '');
  const clickUntil = async (want: RegExp) => {
    for (let i = 0; i < 12 && !want.test(await text()); i++) {
      await demoPage.click('#one');
      await demoPage.waitForTimeout(300);
    }
  };
  await clickUntil(/9 of 10 left/);
  const parts = [await statusShot(demoPage, 'ok.png')];
  await clickUntil(/1 of 10 left/);
  parts.push(await statusShot(demoPage, 'low.png'));
  await clickUntil(/Limit reached/);
  parts.push(await statusShot(demoPage, 'exhausted.png'));
  const { readFileSync, rmSync } = await import('node:fs');
  const imgs = parts
    .map(
      (p) =>
        `<img src="data:image/png;base64,${readFileSync(p).toString('base64')}" style="zoom:0.5;align-self:flex-start">`,
    )
    .join('');
  const strip = await browser.newPage({ viewport: { width: 900, height: 200 }, deviceScaleFactor: 2 });
  await strip.setContent(
    `<div id="strip" style="display:inline-flex;flex-direction:column;gap:8px;padding:12px;background:#fff">${imgs}</div>`,
  );
  await strip.locator('#strip').screenshot({ path: join(OUT, 'status-states.png') });
  rmSync(join(OUT, '.parts'), { recursive: true, force: true });
  // The dashboard, live: load keeps flowing while the picture is taken, so the rates, the chart's lines and the
  // policies table all show traffic (bounded: at most 90 s of rounds on loopback).
  const dash = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await dash.goto(`${demo.gateway.adminUrl}/dashboard/`);
  await dash.fill('#token', token);
  await dash.click('button[type=submit]');
  await dash.waitForFunction(() => document.getElementById('connection')?.textContent === 'Live');
  let flowing = true;
  const flow = (async () => {
    const end = Date.now() + 90_000;
    for (let round = 0; flowing && Date.now() < end; round++) {
      // Waves: a few busy seconds, then a quieter one, so the chart has a shape.
      await load(round % 6 === 5 ? 1 : 3);
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  await dash.waitForTimeout(20_000);
  // A string, not a function: tsx would wrap a named helper in __name, which the page does not have.
  const live = `['kpi-allowed', 'kpi-limited'].every((id) => Number.parseFloat(document.getElementById(id)?.textContent ?? '') > 0)`;
  await dash.waitForFunction(live, undefined, { timeout: 30_000 });
  await dash.screenshot({ path: join(OUT, 'dashboard.png') });
  const stillLive = await dash.evaluate(live);
  flowing = false;
  await flow;
  if (!stillLive) throw new Error('the dashboard showed no allowed or no limited requests when it was taken');

  const replay = await replayReportImage(browser, OUT);
  console.log(`docs images: ${join(OUT, 'dashboard.png')}, ${join(OUT, 'status-states.png')}, ${replay}`);
} finally {
  await browser.close();
  await demo.stop();
}
