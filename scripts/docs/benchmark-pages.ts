/**
 * docs/benchmarks.md as two pages of the site: the current figures (everything above the `# Run log` heading) and
 * the run log (the heading and everything below it), with the anchors of the log's headings so that a link into
 * the log lands on its page.
 */

/** The heading that opens the run log of docs/benchmarks.md. */
export const RUN_LOG_HEADING = '# Run log';

/**
 * The anchor VitePress gives a heading (its slugify, for headings, which hold no control character: combining marks and punctuation out, runs
 * of spaces and punctuation, underscores included, as one dash, lower case).
 */
export function headingAnchor(heading: string): string {
  return heading
    .normalize('NFKD')
    .replace(/[\u0300-\u036F]/g, '')
    .replace(/[\s~`!@#$%^&*()\-_+=[\]{}|\\;:"'\u201c\u201d\u2018\u2019<>,.?/]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '')
    .replace(/^(\d)/, '_$1')
    .toLowerCase();
}

/**
 * Splits the benchmarks document.
 *
 * @throws Error when the document has no run log heading, since the site's two pages depend on it.
 */
export function splitBenchmarks(markdown: string): { summary: string; log: string; logAnchors: Set<string> } {
  const at = markdown.search(/^# Run log$/m);
  if (at < 0)
    throw new Error(`docs/benchmarks.md: no "${RUN_LOG_HEADING}" heading to split the figures from the log`);
  const log = markdown.slice(at);
  const logAnchors = new Set<string>();
  for (const m of log.matchAll(/^#{1,6} (.+)$/gm)) logAnchors.add(headingAnchor(m[1]));
  // The summary links into the log by anchor: on the site the log is a page of its own.
  const summary = markdown
    .slice(0, at)
    .replace(/\]\(#([^)]+)\)/g, (link, anchor: string) =>
      logAnchors.has(anchor) ? `](/reference/benchmark-log#${anchor})` : link,
    );
  return { summary, log, logAnchors };
}
