/**
 * The error page of the site, generated from docs/errors.md (one row per code, the table tests and reviewers keep)
 * and from `ErrorCode` (packages/sluice/src/core/errors.ts): each table becomes an index whose rows link to one
 * entry per code, and the build fails when a code of `ErrorCode` has no row.
 */

/** One row of a table of docs/errors.md, with the anchor of its entry. */
export interface ErrorEntry {
  readonly code: string;
  readonly anchor: string;
  /** The table's section heading (`Library errors` for the first table). */
  readonly section: string;
  /** Column name to cell text, the `code` column left out. */
  readonly fields: ReadonlyArray<readonly [string, string]>;
}

/** The members of `ErrorCode` with their TSDoc summary, read from the source text. */
export function errorCodeMembers(source: string): { name: string; code: string; summary: string }[] {
  const members: { name: string; code: string; summary: string }[] = [];
  // A comment's text holds no `*/`, so a member never takes the comment of the object above it.
  const member = /\/\*\*((?:(?!\*\/)[\s\S])*?)\*\/\s*(\w+): '([A-Z_]+)'/g;
  for (const m of source.matchAll(member)) {
    const summary = m[1]
      .split('\n')
      .map((l) => l.replace(/^\s*\*\s?/, '').trim())
      .join(' ')
      .replace(/\{@link\s+([^}]+)\}/g, '`$1`')
      .trim();
    members.push({ name: m[2], code: m[3], summary });
  }
  return members;
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());
}

/**
 * Turns docs/errors.md into the page, and lists its entries.
 *
 * @param markdown - the text of docs/errors.md.
 * @param errorsSource - the text of packages/sluice/src/core/errors.ts.
 * @throws Error naming every `ErrorCode` value without a row, so a new code cannot ship undocumented.
 */
export function errorReference(
  markdown: string,
  errorsSource: string,
): { page: string; entries: ErrorEntry[] } {
  const members = errorCodeMembers(errorsSource);
  const byCode = new Map(members.map((m) => [m.code, m]));
  const used = new Set<string>();
  const entries: ErrorEntry[] = [];
  const out: string[] = [];
  const lines = markdown.split('\n');
  let section = 'Library errors';
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const heading = /^(#{1,6}) (.+)$/.exec(line);
    if (heading !== null) {
      if (heading[1] === '#') {
        out.push('# Error codes and problem types');
      } else {
        section = heading[2].replace(/`/g, '');
        out.push(line);
      }
      i++;
      continue;
    }
    if (!line.startsWith('|') || !lines[i + 1]?.startsWith('| ---')) {
      out.push(line);
      i++;
      continue;
    }
    const header = cells(line);
    i += 2;
    const rows: string[][] = [];
    while (i < lines.length && lines[i].startsWith('|')) rows.push(cells(lines[i++]));
    const block: ErrorEntry[] = rows.map((row) => {
      const code = row[0].replace(/`/g, '');
      let anchor = slug(code);
      if (used.has(anchor)) anchor = `${slug(section.split(' ').slice(0, 2).join(' '))}-${anchor}`;
      used.add(anchor);
      const fields = header.slice(1).map((h, k) => [h, row[k + 1] ?? ''] as const);
      return { code, anchor, section, fields };
    });
    entries.push(...block);
    const second = header[1];
    out.push(`| code | ${second} | meaning |`, '| --- | --- | --- |');
    for (const e of block) {
      const meaning = e.fields.find(([h]) => h === 'meaning')?.[1] ?? '';
      const short = meaning.split(/; |: /)[0];
      out.push(`| [\`${e.code}\`](#${e.anchor}) | ${e.fields[0][1]} | ${short} |`);
    }
    out.push('');
    for (const e of block) {
      out.push(`#### \`${e.code}\` {#${e.anchor}}`, '');
      const member = byCode.get(e.code);
      if (member !== undefined) out.push(`\`ErrorCode.${member.name}\`: ${member.summary}`, '');
      for (const [h, text] of e.fields) out.push(`- **${h}**: ${text}`);
      out.push('');
    }
  }
  const missing = members.filter((m) => !entries.some((e) => e.code === m.code)).map((m) => m.code);
  if (missing.length > 0) {
    throw new Error(`docs/errors.md has no row for ${missing.join(', ')} of ErrorCode: add one per code`);
  }
  return { page: out.join('\n'), entries };
}
