/**
 * Where each Markdown source of the repository lands in the documentation site, and the rewriting of its links:
 * a link to a file the site publishes becomes a link to that page, a link to any other file of the repository
 * becomes its path in code (the site has no page for it, and a dead link would fail the crawl).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, posix, relative } from 'node:path';

/** One Markdown source and the site page (path below the site root, without `.md`) it becomes. */
export interface SitePage {
  /** The source, relative to the repository root. */
  readonly source: string;
  /** The page, for example `guide/identity`. */
  readonly page: string;
}

/** Root documents of docs/ that are the project's record rather than a guide, and their pages. */
const PROJECT_DOCS: Readonly<Record<string, string>> = {
  'docs/DECISIONS.md': 'project/decisions',
  'docs/requirements.md': 'project/requirements',
  'docs/repository.md': 'project/repository',
  'CHANGELOG.md': 'project/changelog',
  'CONTRIBUTING.md': 'project/contributing',
  'ARCHITECTURE.md': 'project/architecture',
};

/** Sources with a generated page of their own (the generator reads the source). */
export const GENERATED_FROM: Readonly<Record<string, string>> = {
  'docs/errors.md': 'reference/errors',
  'docs/benchmarks.md': 'reference/benchmarks',
  'packages/gateway/schema/rate-limits.schema.json': 'reference/configuration',
  'packages/gateway/examples/rate-limits.yaml': 'reference/configuration',
  'README.md': 'index',
  'packages/sluice/README.md': 'guide/getting-started-library',
  'packages/gateway/README.md': 'guide/getting-started-gateway',
  'examples/': 'guide/examples',
};

function markdownIn(root: string, folder: string): string[] {
  const dir = join(root, folder);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => posix.join(folder, f));
}

/**
 * Every Markdown source the site publishes as it is (links rewritten): the guides of docs/guide/, the other
 * documents of docs/ (as guides, unless they are the project's record or have a generated page), the READMEs of
 * the library's entry points, and the project's record. A file added to docs/ or docs/guide/ is picked up here.
 */
export function sitePages(root: string): SitePage[] {
  const found: SitePage[] = [];
  if (existsSync(join(root, 'docs/index.md'))) found.push({ source: 'docs/index.md', page: 'index' });
  for (const source of markdownIn(root, 'docs/guide')) {
    found.push({ source, page: `guide/${posix.basename(source, '.md')}` });
  }
  for (const source of markdownIn(root, 'docs')) {
    if (source === 'docs/index.md' || GENERATED_FROM[source] !== undefined) continue;
    const page = PROJECT_DOCS[source] ?? `guide/${posix.basename(source, '.md')}`;
    found.push({ source, page });
  }
  const library = 'packages/sluice/src';
  for (const entry of readdirSync(join(root, library)).sort()) {
    const source = `${library}/${entry}/README.md`;
    if (existsSync(join(root, source))) found.push({ source, page: `library/${entry}` });
  }
  for (const [source, page] of Object.entries(PROJECT_DOCS)) {
    if (!source.startsWith('docs/') && existsSync(join(root, source))) found.push({ source, page });
  }
  return found;
}

/** The page a repository path (relative to the root, a file or a folder) is published as, if any. */
export function pageFor(target: string, pages: readonly SitePage[]): string | undefined {
  const direct = pages.find((p) => p.source === target)?.page ?? GENERATED_FROM[target];
  if (direct !== undefined) return direct;
  if (target.startsWith('examples/')) return GENERATED_FROM['examples/'];
  return undefined;
}

/** The HTML elements a document may write as markup; any other `<name` in prose is text. */
const HTML_TAGS = new Set(
  'a abbr b blockquote br caption code dd del details div dl dt em figcaption figure h1 h2 h3 h4 h5 h6 hr i img kbd li ol p picture pre s small source span strong sub summary sup table tbody td tfoot th thead tr u ul video'.split(
    ' ',
  ),
);

/**
 * Writes `<` as `&lt;` before a name that is no HTML element (`<tier>.concurrent`, `<prefix>_total`, a custom
 * element named in prose) outside code spans: GitHub shows such text as written, while the site compiles a page
 * into a template, where it would open an element that never closes and fail the build.
 */
export function escapeStrayTags(markdown: string): string {
  return markdown
    .split(/(`+[^`]*?`+)/)
    .map((part, i) =>
      i % 2 === 1
        ? part
        : part.replace(/<(\/?)([A-Za-z][\w-]*)/g, (whole, slash: string, name: string, at: number) => {
            const rest = part.slice(at + 1);
            if (/^[a-z][a-z0-9+.-]*:/i.test(rest)) return whole; // an autolink, <https://...>
            return HTML_TAGS.has(name.toLowerCase()) ? whole : `&lt;${slash}${name}`;
          }),
    )
    .join('');
}

/** Whether a link target leaves the repository (a URL with a scheme, or a mail address). */
function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target);
}

/**
 * Rewrites the links and images of one Markdown source (outside code fences) for its page.
 *
 * @param markdown - the source text.
 * @param source - its path relative to the repository root.
 * @param pages - every published page.
 * @param root - the repository root, to tell a repository file from a typo.
 * @param anchorPage - the page that holds an anchor of a generated page split in two (benchmarks), if any.
 * @param titleOf - a page's title, shown instead of a link text that is the source's path (`docs/nginx.md`).
 */
export function rewriteLinks(
  markdown: string,
  source: string,
  pages: readonly SitePage[],
  root: string,
  anchorPage: (page: string, anchor: string) => string = (page) => page,
  titleOf: (page: string) => string | undefined = () => undefined,
): string {
  const fromDir = posix.dirname(source);
  const parts = markdown.split(/(^```[\s\S]*?^```)/m);
  return parts
    .map((part, i) => {
      if (i % 2 === 1) return part;
      // A code span wrapped over two lines: markdown-it reads an HTML-like `<name>` inside it as a tag, which the
      // page's template then refuses; on one line it stays code.
      const joined = escapeStrayTags(part.replace(/(^|[^`])`([^`\n]+)\n([^`\n]+)`(?!`)/g, '$1`$2 $3`'));
      return joined.replace(
        /(!?)\[([^\]\n]*)\]\(([^)\s]+)\)/g,
        (whole, bang: string, text: string, target: string) => {
          if (isExternal(target) || target.startsWith('#') || target.startsWith('/')) return whole;
          const [path, anchor] = target.split('#', 2) as [string, string | undefined];
          const repoPath = posix.normalize(posix.join(fromDir, decodeURIComponent(path)));
          if (bang === '!' || /\.(png|svg|jpg|gif)$/.test(repoPath)) {
            if (repoPath.startsWith('docs/images/')) {
              return `${bang}[${text}](/images/${posix.basename(repoPath)})`;
            }
            return text;
          }
          const page = pageFor(repoPath.replace(/\/$/, '') === 'examples' ? 'examples/' : repoPath, pages);
          if (page !== undefined) {
            const where = anchor === undefined ? page : anchorPage(page, anchor);
            const link = where === 'index' ? '/' : `/${where}`;
            // A repository path as the text reads well on GitHub, not on the site: the page's title instead.
            const isPath = /^`?[\w./-]+\.md`?$/.test(text) || text === 'README';
            const shown = isPath ? (titleOf(where) ?? text) : text;
            return `[${shown}](${link}${anchor === undefined ? '' : `#${anchor}`})`;
          }
          // A file of the repository without a page: named, so a reader finds it in the clone.
          const exists = existsSync(join(root, repoPath));
          const shown = exists ? relative(root, join(root, repoPath)) : repoPath;
          return text.includes(shown) || text === `\`${shown}\`` ? text : `${text} (\`${shown}\`)`;
        },
      );
    })
    .join('');
}
