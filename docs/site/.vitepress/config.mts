/**
 * The documentation site's VitePress configuration. The pages themselves are assembled into `docs/site/pages/`
 * by `scripts/docs/build-site.ts` (guides from docs/, references generated from the schema, the TSDoc, ErrorCode
 * and the CLI's help); the sidebar is read from that folder, so a guide page dropped into docs/guide/ appears in
 * it without an edit here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitepress';

const pages = fileURLToPath(new URL('../pages/', import.meta.url));

/** Sidebar order of the hand-written guides; a page not listed follows them in name order. */
const GUIDE_ORDER = [
  'getting-started-library',
  'getting-started-gateway',
  'getting-started-sdk',
  'tiers-and-endpoint-rules',
  'identity',
  'stores-and-fleets',
  'failure-modes',
  'operator-controls',
  'replay-and-recommend',
  'capacity',
  'costs',
  'production',
  'operations',
  'security',
  'nginx',
  'envoy',
  'troubleshooting',
  'examples',
];

interface Item {
  text: string;
  link: string;
}

/** The first `# ` heading of a page, or its file name. */
function titleOf(file: string): string {
  const heading = /^# (.+)$/m.exec(readFileSync(file, 'utf8'));
  return (heading?.[1] ?? file.replace(/^.*\//, '').replace(/\.md$/, '')).replace(/`/g, '');
}

/** The pages of one folder of the assembled site, as sidebar items. */
function itemsOf(folder: string, order: readonly string[] = []): Item[] {
  const dir = join(pages, folder);
  if (!existsSync(dir)) return [];
  const names = readdirSync(dir)
    .filter((f) => f.endsWith('.md') && f !== 'index.md')
    .map((f) => f.slice(0, -3));
  const rank = (n: string) => (order.includes(n) ? order.indexOf(n) : order.length);
  names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return names.map((n) => ({ text: titleOf(join(dir, `${n}.md`)), link: `/${folder}/${n}` }));
}

/** The API reference's entry points: every folder below reference/api with an index page, by name. */
function apiItems(): Item[] {
  const found: Item[] = [];
  const visit = (dir: string, rel: string) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const sub = join(dir, entry.name);
      const link = `${rel}${entry.name}/`;
      if (existsSync(join(sub, 'index.md'))) found.push({ text: titleOf(join(sub, 'index.md')), link });
      visit(sub, link);
    }
  };
  visit(join(pages, 'reference/api'), '/reference/api/');
  return found.sort((a, b) => a.text.replace(/^@/, '').localeCompare(b.text.replace(/^@/, '')));
}

const guides = itemsOf('guide', GUIDE_ORDER);
const started = guides.filter((i) => i.link.startsWith('/guide/getting-started'));

export default defineConfig({
  title: 'Sluice',
  description: 'Rate limiting for Node.js services and a rate-limiting gateway, exact and explainable.',
  srcDir: 'pages',
  outDir: 'dist',
  cacheDir: '.cache',
  cleanUrls: false,
  lastUpdated: false,
  // No request leaves the page: no web fonts, no analytics, the search index is local.
  head: [
    ['meta', { name: 'robots', content: 'noindex' }],
    // No favicon to fetch: a page asks for nothing the site does not have.
    ['link', { rel: 'icon', href: 'data:,' }],
  ],
  markdown: { theme: { light: 'github-light', dark: 'github-dark' } },
  vue: { template: { compilerOptions: { isCustomElement: (tag) => tag.includes('-') } } },
  themeConfig: {
    search: { provider: 'local' },
    outline: { level: [2, 3] },
    nav: [
      { text: 'Guide', link: started[0]?.link ?? '/' },
      { text: 'Configuration', link: '/reference/configuration' },
      { text: 'API', link: '/reference/api/' },
      { text: 'Errors', link: '/reference/errors' },
      { text: 'Benchmarks', link: '/reference/benchmarks' },
    ],
    sidebar: [
      { text: 'Getting started', items: started },
      { text: 'Guides', items: guides.filter((i) => !started.includes(i)) },
      { text: 'Library guides', collapsed: true, items: itemsOf('library') },
      {
        text: 'Reference',
        items: [
          { text: 'Configuration file', link: '/reference/configuration' },
          { text: 'Command line', link: '/reference/cli' },
          { text: 'Error codes and problem types', link: '/reference/errors' },
          { text: 'API', link: '/reference/api/' },
          { text: 'Benchmarks', link: '/reference/benchmarks' },
          { text: 'Benchmark run log', link: '/reference/benchmark-log' },
        ],
      },
      { text: 'API reference', collapsed: true, items: apiItems() },
      { text: 'Project', collapsed: true, items: itemsOf('project') },
    ],
  },
});
