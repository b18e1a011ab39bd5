/**
 * The examples on the site are the files of examples/ that test/examples.test.ts runs, never copies: a page
 * names one with a `<!-- example: examples/NAME -->` line, replaced here by the file's text in a code block, and
 * the examples page shows every one of them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join, posix } from 'node:path';

/** The line a guide writes where an example file goes. */
export const EXAMPLE_MARKER = /^<!-- example: (examples\/[\w./-]+) -->$/gm;

const LANGUAGES: Readonly<Record<string, string>> = {
  '.mjs': 'js',
  '.js': 'js',
  '.ts': 'ts',
  '.html': 'html',
};

/** The example files, relative to the repository root, in name order (examples/browser/index.html included). */
export function exampleFiles(root: string): string[] {
  const files: string[] = [];
  const visit = (folder: string) => {
    for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
      const path = posix.join(folder, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (LANGUAGES[extname(entry.name)] !== undefined) files.push(path);
    }
  };
  visit('examples');
  return files.sort();
}

/** A code block holding one example file as it is. */
export function exampleBlock(root: string, file: string): string {
  const text = readFileSync(join(root, file), 'utf8').trimEnd();
  return [`\`${file}\`:`, '', `\`\`\`${LANGUAGES[extname(file)] ?? 'text'}`, text, '```'].join('\n');
}

/**
 * Replaces each example marker of a page with the file.
 *
 * @throws Error for a marker naming a file that does not exist (the message names it).
 */
export function inlineExamples(markdown: string, root: string): string {
  return markdown.replace(EXAMPLE_MARKER, (_line, file: string) => exampleBlock(root, file));
}

/** The examples page: every example file, each under its own heading. */
export function examplesPage(root: string): string {
  const out = [
    '# Examples',
    '',
    'The complete files under `examples/`, shown as they are: `test/examples.test.ts` runs each one, so what',
    'this page shows is what the suite runs. Imports use the package names, as in your project. Run one with',
    '`node examples/express.mjs` after `npm run build`, then call `curl -i http://127.0.0.1:3000/api/hello` six',
    'times: five answers `200`, then `429` with `Retry-After: 1`.',
    '',
  ];
  for (const file of exampleFiles(root))
    out.push(`## ${file.replace('examples/', '')}`, '', exampleBlock(root, file), '');
  return out.join('\n');
}
