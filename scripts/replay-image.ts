/**
 * The README's picture of `sluice replay --html`: a generated hour of access log (Zipf clients and paths) replayed
 * under the example configuration and against a stricter one, the page opened in headless Chromium and
 * screenshot. Part of `npm run docs:images`; `npm run docs:images -- replay` takes this picture alone.
 */
import { createReadStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { generateLog } from '../bench/replay/generate-log.js';
import { buildReplayPage } from '../packages/gateway/replay-ui/build.js';
import { loadConfigText } from '../packages/gateway/src/config/load-config.js';
import { replayReport } from '../packages/gateway/src/replay/replay-report.js';
import { runReplay } from '../packages/gateway/src/replay/replay-run.js';
import { replayHtml } from '../packages/gateway/src/replay/report-html.js';

const EXAMPLE = new URL('../packages/gateway/examples/rate-limits.yaml', import.meta.url);

function config(text: string) {
  const r = loadConfigText(text, 'rate-limits.yaml', { env: {} });
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
}

/**
 * Writes `replay-report.png` into `out`.
 *
 * @returns the file written.
 */
export async function replayReportImage(browser: Browser, out: string): Promise<string> {
  await buildReplayPage();
  const dir = mkdtempSync(join(tmpdir(), 'sluice-replay-image-'));
  try {
    const log = join(dir, 'access.log');
    // A quarter of an hour in the middle where five scripted clients hammer the studio endpoint.
    await generateLog(log, 120_000, 3_000, 3600, 11, { from: 0.4, to: 0.65, share: 0.25, clients: 5 });
    const text = readFileSync(EXAMPLE, 'utf8');
    const run = await runReplay({
      config: { name: 'rate-limits.yaml', config: config(text) },
      against: {
        name: 'stricter.yaml',
        config: config(text.replace('requestsPerMinute: 300', 'requestsPerMinute: 120')),
      },
      logs: [{ name: 'access.log', open: () => createReadStream(log) }],
    });
    const file = join(dir, 'report.html');
    writeFileSync(file, replayHtml(replayReport(run)));
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: 'dark' });
    await page.goto(pathToFileURL(file).href);
    await page.waitForFunction(() => document.documentElement.dataset.ready === 'true');
    const path = join(out, 'replay-report.png');
    await page.screenshot({ path });
    await page.close();
    return path;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
