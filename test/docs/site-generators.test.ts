/**
 * The generators of the documentation site, on the repository's own sources and on made-up ones: every key of
 * the schema has an entry, every ErrorCode a row, links land on pages, examples are the files themselves. The
 * built site is checked in Chromium by site.browser.test.ts.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { splitBenchmarks } from '../../scripts/docs/benchmark-pages.js';
import { configEntries, configReferencePage, entryAnchor } from '../../scripts/docs/config-reference.js';
import { errorCodeMembers, errorReference } from '../../scripts/docs/error-reference.js';
import { exampleFiles, examplesPage, inlineExamples } from '../../scripts/docs/example-pages.js';
import { escapeStrayTags, rewriteLinks, sitePages } from '../../scripts/docs/site-map.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const SCHEMA = JSON.parse(read('packages/gateway/schema/rate-limits.schema.json')) as Record<string, unknown>;

/** Every property name of the schema, wherever it sits (properties of definitions included). */
function propertyNames(node: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const n of node) propertyNames(n, into);
  else if (typeof node === 'object' && node !== null) {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'properties' && typeof v === 'object' && v !== null)
        for (const p of Object.keys(v)) into.add(p);
      propertyNames(v, into);
    }
  }
  return into;
}

describe('the configuration reference', () => {
  const entries = configEntries(SCHEMA);
  const page = configReferencePage(SCHEMA, read('packages/gateway/examples/rate-limits.yaml'));

  it('has an entry for every property the schema names, with an anchor on the page', () => {
    const lastSegments = new Set(entries.map((e) => e.path.split(/\.|\[\]\./).pop()));
    for (const name of propertyNames(SCHEMA)) expect(lastSegments, name).toContain(name);
    for (const e of entries) expect(page).toContain(`{#${entryAnchor(e.path)}}`);
    expect(new Set(entries.map((e) => entryAnchor(e.path))).size).toBe(entries.length);
  });

  it('states type, default and range as the schema does', () => {
    const port = entries.find((e) => e.path === 'server.port');
    expect(port).toMatchObject({ type: 'integer', default: '8080', range: '0 to 65535', required: false });
    expect(entries.find((e) => e.path === 'rateLimiting')?.required).toBe(true);
    expect(entries.find((e) => e.path === 'rateLimiting.tiers.<name>.requestsPerMinute')).toBeDefined();
    expect(entries.find((e) => e.path === 'rateLimiting.endpoints[].pattern')?.required).toBe(true);
  });

  it('writes a pattern holding a backtick as one code span, and keeps `<` in code spans as written', () => {
    const header = entries.find((e) => e.path === 'apiKeys.header' || e.path === 'identity.apiKeys.header');
    expect(header?.range).toBe("matches `` ^[A-Za-z0-9!#$%&'*+.^_`|~-]+$ ``");
    const schema = {
      type: 'object',
      properties: { a: { type: 'string', description: 'In `<name>`, a <name>.' } },
    };
    expect(configReferencePage(schema, '')).toContain('In `<name>`, a &lt;name>.');
  });

  it('ends with the example file, as shipped', () => {
    expect(page).toContain(read('packages/gateway/examples/rate-limits.yaml').trimEnd());
  });

  it('lists every key of any schema of nested objects, lists and maps (property)', () => {
    type Tree = { [key: string]: Tree | 'leaf' };
    const key = fc.stringMatching(/^[a-z][a-zA-Z]{0,6}$/);
    const { tree } = fc.letrec<{ tree: Tree }>((t) => ({
      tree: fc.dictionary(key, fc.oneof({ depthSize: 'small' }, fc.constant('leaf' as const), t('tree')), {
        maxKeys: 4,
      }),
    }));
    const toSchema = (node: Tree | 'leaf', asList: boolean): Record<string, unknown> => {
      if (node === 'leaf') return { type: 'string', description: 'a leaf (default x)' };
      const object = {
        type: 'object',
        properties: Object.fromEntries(
          Object.entries(node).map(([k, v], i) => [k, toSchema(v, i % 2 === 1)]),
        ),
      };
      return asList ? { type: 'array', items: object } : object;
    };
    const expected = (node: Tree, prefix: string): string[] =>
      Object.entries(node).flatMap(([k, v], i) => {
        const path = `${prefix}${k}`;
        if (v === 'leaf') return [path];
        const list = i % 2 === 1;
        return [path, ...expected(v, list ? `${path}[].` : `${path}.`)];
      });
    fc.assert(
      fc.property(tree, (t) => {
        const schema = toSchema(t, false);
        expect(configEntries(schema).map((e) => e.path)).toEqual(expected(t, ''));
      }),
    );
  });

  it('takes a key added to the schema at the next generation, with no edit elsewhere', () => {
    const copy = structuredClone(SCHEMA) as { properties: Record<string, Record<string, unknown>> };
    copy.properties.server.properties = {
      ...(copy.properties.server.properties as object),
      brandNewKey: { type: 'integer', minimum: 2, description: 'A key added today (default 7).' },
    };
    const entry = configEntries(copy).find((e) => e.path === 'server.brandNewKey');
    expect(entry).toMatchObject({ type: 'integer', default: '7', range: 'at least 2' });
    expect(configReferencePage(copy, '')).toContain('{#server-brandnewkey}');
  });
});

describe('the error page', () => {
  const errors = read('packages/sluice/src/core/errors.ts');

  it('has an entry, linked from its row, for every ErrorCode and every problem code of docs/errors.md', () => {
    const { page, entries } = errorReference(read('docs/errors.md'), errors);
    const members = errorCodeMembers(errors);
    expect(members.length).toBeGreaterThan(10);
    // Each member has its own comment, not the one of the object above it.
    expect(members[0]).toMatchObject({ name: 'InvalidOption', code: 'ERR_INVALID_OPTION' });
    expect(members[0].summary).toMatch(/^An option is missing/);
    for (const m of members) {
      const entry = entries.find((e) => e.code === m.code);
      expect(entry, m.code).toBeDefined();
      expect(page).toContain(`[\`${m.code}\`](#${entry?.anchor})`);
      expect(page).toContain(`#### \`${m.code}\` {#${entry?.anchor}}`);
    }
    for (const code of ['rate_limited', 'invalid_credentials', 'SLUICE_W_NO_PEER_ADDRESS']) {
      expect(entries.map((e) => e.code)).toContain(code);
    }
    expect(new Set(entries.map((e) => e.anchor)).size).toBe(entries.length);
  });

  it('refuses a code of ErrorCode without a row, naming it', () => {
    const withNew = errors.replace(
      'export const ErrorCode = {',
      "export const ErrorCode = {\n  /** A made-up code. */\n  MadeUp: 'ERR_MADE_UP',",
    );
    expect(() => errorReference(read('docs/errors.md'), withNew)).toThrow(/ERR_MADE_UP/);
  });
});

describe('the pages and their links', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'sluice-site-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('publishes every guide of docs/guide/ and every other document of docs/, a new one without an edit', () => {
    for (const dir of ['docs/guide', 'packages/sluice/src/http', 'examples']) {
      mkdirSync(join(scratch, dir), { recursive: true });
    }
    writeFileSync(join(scratch, 'docs/guide/capacity.md'), '# Capacity\n');
    writeFileSync(join(scratch, 'docs/production.md'), '# Production\n');
    writeFileSync(join(scratch, 'docs/DECISIONS.md'), '# Decisions\n');
    writeFileSync(join(scratch, 'docs/errors.md'), '# Errors\n');
    writeFileSync(join(scratch, 'packages/sluice/src/http/README.md'), '# http\n');
    const pages = sitePages(scratch);
    expect(pages).toEqual(
      expect.arrayContaining([
        { source: 'docs/guide/capacity.md', page: 'guide/capacity' },
        { source: 'docs/production.md', page: 'guide/production' },
        { source: 'docs/DECISIONS.md', page: 'project/decisions' },
        { source: 'packages/sluice/src/http/README.md', page: 'library/http' },
      ]),
    );
    // docs/errors.md has a generated page of its own.
    expect(pages.map((p) => p.source)).not.toContain('docs/errors.md');
  });

  it('points links at pages, keeps anchors and names repository files without a page', () => {
    const pages = sitePages(ROOT);
    const text = [
      '[NGINX](../nginx.md) [errors](../errors.md#err-cross-slot) [redis](../../packages/sluice/src/redis/README.md)',
      '[rules](../../deploy/prometheus/rules/rate-limiting.yaml) [web](https://example.com/) [here](#top)',
      '![dash](../images/dashboard.png) [express](../../examples/express.mjs)',
      '```md',
      '[kept](../not-rewritten.md)',
      '```',
    ].join('\n');
    const out = rewriteLinks(text, 'docs/guide/x.md', pages, ROOT);
    expect(out).toContain('[NGINX](/guide/nginx)');
    expect(out).toContain('[errors](/reference/errors#err-cross-slot)');
    expect(out).toContain('[redis](/library/redis)');
    expect(out).toContain('rules (`deploy/prometheus/rules/rate-limiting.yaml`)');
    expect(out).toContain('[web](https://example.com/) [here](#top)');
    expect(out).toContain('![dash](/images/dashboard.png)');
    expect(out).toContain('[express](/guide/examples)');
    expect(out).toContain('[kept](../not-rewritten.md)');
  });

  it('shows a page title for a link whose text is a repository path', () => {
    const titles = (page: string) => (page === 'guide/nginx' ? 'NGINX auth_request' : undefined);
    const out = rewriteLinks(
      '[docs/nginx.md](../nginx.md) and [its README](../nginx.md)',
      'docs/guide/x.md',
      sitePages(ROOT),
      ROOT,
      undefined,
      titles,
    );
    expect(out).toBe('[NGINX auth_request](/guide/nginx) and [its README](/guide/nginx)');
  });

  it('writes a stray <name> of prose as text, leaving HTML, autolinks and code spans as they are', () => {
    const text =
      'policy <tier>.concurrent, <sluice-rate-limit-status>, `<code>`, <br>, <details>, <https://x.dev>';
    expect(escapeStrayTags(text)).toBe(
      'policy &lt;tier>.concurrent, &lt;sluice-rate-limit-status>, `<code>`, <br>, <details>, <https://x.dev>',
    );
    expect(escapeStrayTags('`` a`<b> ``, </name>')).toBe('`` a`<b> ``, &lt;/name>');
  });

  it('joins a code span wrapped over two lines, so that `<name>` in it stays code', () => {
    const out = rewriteLinks(
      'wrapped as `<option> (<listener>):\n<message>`, keeping',
      'docs/x.md',
      [],
      ROOT,
    );
    expect(out).toBe('wrapped as `<option> (<listener>): <message>`, keeping');
  });
});

describe('the READMEs and the guides moved out of them', () => {
  const sources = [
    'README.md',
    'packages/gateway/README.md',
    'packages/sluice/README.md',
    ...[
      'getting-started-library',
      'getting-started-gateway',
      'getting-started-sdk',
      'configuration',
      'tiers-and-endpoint-rules',
      'identity',
      'proxy',
      'stores-and-fleets',
      'failure-modes',
      'headers-metrics-quotas',
      'operator-controls',
      'operations',
      'replay-and-recommend',
      'troubleshooting',
    ].map((g) => `docs/guide/${g}.md`),
  ];

  it.each(sources)('%s links only to files of the repository that exist, as GitHub shows them', (source) => {
    const text = read(source).replace(/^```[\s\S]*?^```/gm, '');
    const broken: string[] = [];
    for (const m of text.matchAll(/\]\(([^)\s#]+)(#[^)]*)?\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const path = join(ROOT, source, '..', decodeURIComponent(target));
      try {
        readFileSync(path);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EISDIR') broken.push(target);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('examples and benchmarks', () => {
  it('puts each example file on a page as it is, the files test/examples.test.ts runs', () => {
    const files = exampleFiles(ROOT);
    const runs = read('test/examples.test.ts');
    expect(files).toContain('examples/express.mjs');
    expect(files).toContain('examples/browser/index.html');
    for (const file of files) {
      expect(runs, `test/examples.test.ts runs ${file}`).toContain(file.replace('examples/', ''));
      expect(examplesPage(ROOT)).toContain(read(file).trimEnd());
    }
    const inlined = inlineExamples('Before\n<!-- example: examples/hono.mjs -->\nAfter', ROOT);
    expect(inlined).toContain(`\`\`\`js\n${read('examples/hono.mjs').trimEnd()}\n\`\`\``);
    expect(() => inlineExamples('<!-- example: examples/missing.mjs -->', ROOT)).toThrow(/missing\.mjs/);
  });

  it('splits docs/benchmarks.md into the current figures and the run log', () => {
    const { summary, log, logAnchors } = splitBenchmarks(read('docs/benchmarks.md'));
    expect(summary).toMatch(/^# Benchmarks/);
    expect(summary).toContain('## Current figures');
    expect(log).toMatch(/^# Run log/);
    expect(logAnchors.has('replay-and-recommend-bench-replay-bench-ts')).toBe(true);
    // Every link of the summary into the log names the log's page, and an anchor the log has.
    const intoLog = [...summary.matchAll(/\]\(\/reference\/benchmark-log#([^)]+)\)/g)].map((m) => m[1]);
    expect(intoLog.length).toBeGreaterThan(5);
    for (const anchor of intoLog) expect(logAnchors, anchor).toContain(anchor);
    expect(summary).not.toMatch(/\]\(#/);
    expect(() => splitBenchmarks('# Benchmarks\n')).toThrow(/Run log/);
  });
});
