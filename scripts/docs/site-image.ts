/**
 * The picture of the documentation site in the README (docs/images/docs-site.png): the built site served on
 * loopback, the configuration reference (generated from the schema) open at the `server` section, in headless
 * Chromium. Run after `npm run docs`:
 *
 *   tsx scripts/docs/site-image.ts
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, toolPath } from '../../test/support/tools.js';
import { serveStatic } from './static-server.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = join(ROOT, 'docs/site/dist');
const OUT = join(ROOT, 'docs/images/docs-site.png');

if (!existsSync(join(DIST, 'index.html')))
  throw new Error(`no built site in ${DIST}: run npm run docs first`);
const site = await serveStatic(DIST);
const browser = await chromium.launch({ executablePath: toolPath('chromium'), args: [...CHROMIUM_ARGS] });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  await page.goto(`${site.origin}/reference/configuration.html#server`);
  await page.locator('#server-maxbodysize').waitFor();
  await page.screenshot({ path: OUT });
  console.log(`docs: ${OUT}`);
} finally {
  await browser.close();
  await site.close();
}
