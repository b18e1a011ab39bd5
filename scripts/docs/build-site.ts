/**
 * `npm run docs`: assembles the documentation site's pages into docs/site/pages/ and builds the static site into
 * docs/site/dist/ with VitePress, offline (no font, script or index is fetched, at build time or when a page is
 * viewed; the search index is local). Both folders are build output, kept out of git.
 *
 *   tsx scripts/docs/build-site.ts            assemble and build
 *   tsx scripts/docs/build-site.ts --pages    assemble only (what the unit tests read)
 */
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateApiReference } from './api-reference.js';
import { splitBenchmarks } from './benchmark-pages.js';
import { cliReferencePage } from './cli-reference.js';
import { configReferencePage } from './config-reference.js';
import { errorReference } from './error-reference.js';
import { examplesPage, inlineExamples } from './example-pages.js';
import { rewriteLinks, type SitePage, sitePages } from './site-map.js';

/** The repository root (two levels above this file). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The VitePress root: its configuration is `.vitepress/config.mts` there. */
export const SITE_ROOT = join(ROOT, 'docs/site');
/** The assembled pages (generated). */
export const PAGES_DIR = join(SITE_ROOT, 'pages');
/** The built site (generated). */
export const DIST_DIR = join(SITE_ROOT, 'dist');

/** Titles of the generated pages, for links whose text is a repository path. */
const GENERATED_TITLES: Readonly<Record<string, string>> = {
  'reference/errors': 'Error codes and problem types',
  'reference/benchmarks': 'Benchmarks',
  'reference/benchmark-log': 'Benchmark run log',
  'reference/configuration': 'Configuration file reference',
  'guide/examples': 'Examples',
  'guide/getting-started-library': 'Getting started: the library',
  'guide/getting-started-gateway': 'Getting started: the gateway',
  index: 'Sluice',
};

function write(page: string, text: string): void {
  const file = join(PAGES_DIR, `${page}.md`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}

function read(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** Renames TypeDoc's `@sluice/gateway` folder (a leading `@` is a Vite prefix in a URL) and its links. */
function renameScopedFolder(apiDir: string): void {
  const scoped = join(apiDir, '@sluice');
  if (!existsSync(scoped)) return;
  cpSync(join(scoped, 'gateway'), join(apiDir, 'gateway'), { recursive: true });
  rmSync(scoped, { recursive: true });
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = join(dir, entry.name);
      if (entry.isDirectory()) visit(file);
      else if (entry.name.endsWith('.md')) {
        const text = readFileSync(file, 'utf8');
        const renamed = text.replace(/\]\(([^)]*?)@sluice\/gateway\//g, ']($1gateway/');
        if (renamed !== text) writeFileSync(file, renamed);
      }
    }
  };
  visit(apiDir);
}

/**
 * Writes every page of the site into docs/site/pages/.
 *
 * @returns the exported symbols per entry point (from TypeDoc), for the checks of the tests.
 */
export async function assemblePages(): Promise<{ symbols: ReadonlyMap<string, readonly string[]> }> {
  rmSync(PAGES_DIR, { recursive: true, force: true });
  mkdirSync(PAGES_DIR, { recursive: true });
  const pages: SitePage[] = sitePages(ROOT);
  const bench = splitBenchmarks(read('docs/benchmarks.md'));
  const anchorPage = (page: string, anchor: string) =>
    page === 'reference/benchmarks' && bench.logAnchors.has(anchor) ? 'reference/benchmark-log' : page;

  const titles = new Map<string, string>(Object.entries(GENERATED_TITLES));
  for (const { source, page } of pages) {
    const heading = /^# (.+)$/m.exec(read(source));
    if (heading !== null) titles.set(page, heading[1].replace(/`/g, ''));
  }
  const titleOf = (page: string) => titles.get(page);
  for (const { source, page } of pages) {
    const text = inlineExamples(read(source), ROOT);
    write(page, rewriteLinks(text, source, pages, ROOT, anchorPage, titleOf));
  }
  const generated = (page: string, source: string, text: string) =>
    write(page, rewriteLinks(text, source, pages, ROOT, anchorPage, titleOf));
  generated('reference/benchmarks', 'docs/benchmarks.md', bench.summary);
  generated('reference/benchmark-log', 'docs/benchmarks.md', bench.log);
  generated(
    'reference/errors',
    'docs/errors.md',
    errorReference(read('docs/errors.md'), read('packages/sluice/src/core/errors.ts')).page,
  );
  const schema = JSON.parse(read('packages/gateway/schema/rate-limits.schema.json')) as Record<
    string,
    unknown
  >;
  write(
    'reference/configuration',
    configReferencePage(schema, read('packages/gateway/examples/rate-limits.yaml')),
  );
  write('reference/cli', await cliReferencePage());
  generated('guide/examples', 'examples/README.md', examplesPage(ROOT));

  const publicImages = join(PAGES_DIR, 'public/images');
  mkdirSync(publicImages, { recursive: true });
  for (const image of readdirSync(join(ROOT, 'docs/images'))) {
    copyFileSync(join(ROOT, 'docs/images', image), join(publicImages, image));
  }

  const apiDir = join(PAGES_DIR, 'reference/api');
  const api = await generateApiReference(ROOT, apiDir);
  renameScopedFolder(apiDir);
  return api;
}

/** Assembles the pages and builds the static site into docs/site/dist/. */
export async function buildSite(): Promise<void> {
  await assemblePages();
  const { build } = await import('vitepress');
  await build(SITE_ROOT);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const pagesOnly = process.argv.includes('--pages');
  await (pagesOnly ? assemblePages() : buildSite());
  console.log(
    `docs: ${pagesOnly ? `pages in ${PAGES_DIR}` : `site in ${DIST_DIR}`} (${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
}
