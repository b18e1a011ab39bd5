/**
 * The documentation site as a reader meets it: `npm run docs` builds it from the repository (the build reaches
 * nothing outside it), a crawl from the home page finds every internal link and anchor, headless Chromium renders
 * pages without a console error or a request leaving the site, and the local search finds a configuration key, an
 * API symbol and an error code. Every exported symbol has a page, every schema key an entry, and the examples on
 * the pages are the files test/examples.test.ts runs.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configEntries, entryAnchor } from '../../scripts/docs/config-reference.js';
import { exampleFiles } from '../../scripts/docs/example-pages.js';
import { type StaticSite, serveStatic } from '../../scripts/docs/static-server.js';
import { toolPath } from '../support/tools.js';
import { openWatchedPage } from '../support/watched-page.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = join(ROOT, 'docs/site/dist');
const CHROMIUM = toolPath('chromium');

let site: StaticSite | undefined;
let origin: string;
let profile: string;
let context: BrowserContext;
let page: Page;
let problems: string[];
let requested: string[];
let buildSeconds = 0;
/** Every page the crawl reached: path to HTML. */
const crawled = new Map<string, string>();
/** Every internal link met: the page it is on, the path and the anchor it names. */
const links: { from: string; path: string; anchor: string }[] = [];

/** Crawls the built HTML from `/`, following every same-site `<a href>`. */
async function crawl(): Promise<void> {
  const queue = ['/'];
  while (queue.length > 0) {
    const path = queue.shift() as string;
    if (crawled.has(path)) continue;
    const response = await fetch(new URL(path, origin));
    const html = await response.text();
    crawled.set(path, response.status === 200 ? html : '');
    if (response.status !== 200) continue;
    for (const m of html.matchAll(/<a\b[^>]*?\shref="([^"]*)"/g)) {
      const href = m[1].replace(/&amp;/g, '&');
      const url = new URL(href, new URL(path, origin));
      if (url.origin !== origin) continue;
      links.push({ from: path, path: url.pathname, anchor: decodeURIComponent(url.hash.slice(1)) });
      if (!crawled.has(url.pathname)) queue.push(url.pathname);
    }
  }
}

beforeAll(async () => {
  const started = performance.now();
  // The build as `npm run docs` runs it, in a process of its own.
  await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/docs/build-site.ts'], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  buildSeconds = (performance.now() - started) / 1000;
  site = await serveStatic(DIST);
  origin = site.origin;
  await crawl();
  profile = await mkdtemp(join(tmpdir(), 'sluice-docs-site-'));
  ({ context, page, problems, requested } = await openWatchedPage(CHROMIUM, profile, {
    width: 1280,
    height: 900,
  }));
}, 600_000);

afterAll(async () => {
  await context?.close();
  await site?.close();
  if (profile !== undefined) await rm(profile, { recursive: true, force: true });
});

describe('the built site', () => {
  it('is built by npm run docs', () => {
    console.log(`docs site: built in ${buildSeconds.toFixed(1)} s, ${crawled.size} pages crawled`);
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.docs).toBe(
      'tsx scripts/docs/build-site.ts',
    );
    expect(existsSync(join(DIST, 'index.html'))).toBe(true);
  });

  it('has no broken internal link: every linked page is there, and every anchor of the references', () => {
    expect(crawled.size).toBeGreaterThan(100);
    const missing = [...crawled].filter(([, html]) => html === '').map(([path]) => path);
    expect(missing, 'pages linked but not built').toEqual([]);
    const badAnchors = [
      ...new Set(
        links
          .filter((l) => l.anchor !== '' && !(crawled.get(l.path) ?? '').includes(`id="${l.anchor}"`))
          .map((l) => `${l.from} -> ${l.path}#${l.anchor}`),
      ),
    ];
    // The references are generated here, so an anchor into them that is not there is this build's bug. An anchor
    // into a guide is the guide author's spelling (GitHub and VitePress spell some headings apart): listed, so a
    // reader of the test output sees it, without failing a suite for a page still being written.
    const intoReferences = badAnchors.filter((l) => l.includes('-> /reference/'));
    if (badAnchors.length > intoReferences.length) {
      console.log(`docs site: anchors not found on guide pages:\n  ${badAnchors.join('\n  ')}`);
    }
    expect(intoReferences, 'links to an anchor a reference page does not have').toEqual([]);
  });

  it('loads nothing from outside the site: every script, style and image is its own', () => {
    const outside = new Set<string>();
    for (const html of crawled.values()) {
      for (const m of html.matchAll(/<(?:script|img|link)\b[^>]*?\s(?:src|href)="(https?:)?\/\/([^"]+)"/g)) {
        outside.add(m[2]);
      }
    }
    expect([...outside]).toEqual([]);
  });

  it('renders in Chromium, with the sidebar, and requests nothing off the site', async () => {
    await page.goto(`${origin}/guide/getting-started-library.html`);
    await expect.poll(() => page.locator('.VPSidebar').count()).toBe(1);
    const sidebar = await page
      .locator('.VPSidebar a')
      .evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    for (const guide of readdirSync(join(ROOT, 'docs/guide')).filter((f) => f.endsWith('.md'))) {
      expect(sidebar, guide).toContain(`/guide/${guide.replace(/\.md$/, '.html')}`);
    }
    for (const path of ['/', '/reference/configuration.html', '/reference/errors.html', '/reference/api/']) {
      await page.goto(`${origin}${path}`);
      await expect.poll(() => page.locator('.VPContent').count()).toBe(1);
    }
    expect(requested.filter((url) => !url.startsWith(origin) && !url.startsWith('data:'))).toEqual([]);
    expect(problems).toEqual([]);
  });

  it.each([
    [
      'a configuration key',
      'maxConnectionsPerClient',
      '/reference/configuration.html#server-maxconnectionsperclient',
    ],
    ['an API symbol', 'createHttpLimiter', '/reference/api/sluice/http/functions/createHttpLimiter.html'],
    // A code few pages name: the box lists a query's best results only, and a code the decisions and the
    // changelog name often (ERR_CROSS_SLOT) can rank its reference entry out of them.
    ['an error code', 'ERR_INVALID_COST', '/reference/errors.html#err-invalid-cost'],
  ])('finds %s with the search box', async (_what, query, expected) => {
    await page.goto(`${origin}/`);
    await page.locator('.VPNavBarSearch button').click();
    const input = page.locator('.VPLocalSearchBox input');
    await input.fill(query);
    // A result is the page, or a section of it: an API page's heading, a configuration key's entry.
    const found = () =>
      page
        .locator('.VPLocalSearchBox a.result')
        .evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''))
        .then((hrefs) =>
          hrefs.some((h) => h === expected || (!expected.includes('#') && h.split('#')[0] === expected)),
        );
    // The index loads when the box first opens: on a loaded machine that takes more than poll's default second.
    await expect.poll(found, { timeout: 15_000 }).toBe(true);
    await page.keyboard.press('Escape');
  });
});

describe('the references', () => {
  it('give every exported symbol of every entry point a page (the names of docs/api/*.txt)', () => {
    const missing: string[] = [];
    for (const report of readdirSync(join(ROOT, 'docs/api')).filter((f) => f.endsWith('.txt'))) {
      const folder = report === 'gateway.txt' ? 'gateway' : report.replace(/\.txt$/, '').replace('-', '/');
      const dir = join(DIST, 'reference/api', folder);
      const pages = new Set(
        readdirSync(dir, { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .flatMap((d) => readdirSync(join(dir, d.name)).map((f) => f.replace(/\.html$/, ''))),
      );
      const index = readFileSync(join(dir, 'index.html'), 'utf8');
      for (const line of readFileSync(join(ROOT, 'docs/api', report), 'utf8').split('\n')) {
        const name = line.split(' ')[0];
        if (name === '' || line.startsWith('#') || pages.has(name)) continue;
        // A name exported by another entry too has one page, there; this entry's index links to it.
        const linked = new RegExp(`href="[^"]*/${name}\\.html"`).test(index);
        if (!linked) missing.push(`${folder}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('give every key of the schema an entry', () => {
    const html = crawled.get('/reference/configuration.html') ?? '';
    const schema = JSON.parse(
      readFileSync(join(ROOT, 'packages/gateway/schema/rate-limits.schema.json'), 'utf8'),
    );
    const entries = configEntries(schema);
    expect(entries.length).toBeGreaterThan(150);
    for (const e of entries) expect(html, e.path).toContain(`id="${entryAnchor(e.path)}"`);
  });

  it('show on each guide the example files its markers name, as they are', async () => {
    const guides = readdirSync(join(ROOT, 'docs/guide')).filter((f) => f.endsWith('.md'));
    let shown = 0;
    for (const guide of guides) {
      const text = readFileSync(join(ROOT, 'docs/guide', guide), 'utf8');
      const files = [...text.matchAll(/^<!-- example: (\S+) -->$/gm)].map((m) => m[1]);
      if (files.length === 0) continue;
      await page.goto(`${origin}/guide/${guide.replace(/\.md$/, '.html')}`);
      const blocks = (await page.locator('.vp-doc div[class*="language-"] pre code').allTextContents()).map(
        (b) => b.trimEnd(),
      );
      for (const file of files) {
        expect(blocks, `${guide} shows ${file}`).toContain(readFileSync(join(ROOT, file), 'utf8').trimEnd());
        shown++;
      }
    }
    expect(shown).toBeGreaterThanOrEqual(6);
  });

  it('show the example files as they are, the files test/examples.test.ts runs', async () => {
    await page.goto(`${origin}/guide/examples.html`);
    const blocks = await page.locator('.vp-doc div[class*="language-"] pre code').allTextContents();
    const files = exampleFiles(ROOT);
    expect(blocks.map((b) => b.trimEnd())).toEqual(
      files.map((f) => readFileSync(join(ROOT, f), 'utf8').trimEnd()),
    );
  });
});
