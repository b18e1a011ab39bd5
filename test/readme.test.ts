/**
 * The code blocks of the top-level README, held to the packages as they are: every name a JavaScript or
 * TypeScript block imports must be exported by the module it names, so a renamed or removed export cannot leave
 * a snippet that fails on its first line. Type-only imports are left to the compiler.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The JavaScript and TypeScript code blocks of a Markdown text. */
function codeBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```(?:ts|typescript|js|javascript|mjs)\n([\s\S]*?)^```/gm)].map((m) => m[1]);
}

/** The module and the runtime names of each import statement of a block (`default` for a default import). */
function importsOf(code: string): { from: string; names: string[] }[] {
  const found: { from: string; names: string[] }[] = [];
  const statement = /^import\s+(type\s+)?([\s\S]*?)\s+from\s+'([^']+)';/gm;
  for (const m of code.matchAll(statement)) {
    if (m[1] !== undefined) continue;
    const names: string[] = [];
    const clause = m[2];
    const braces = /\{([\s\S]*)\}/.exec(clause);
    const outside = braces === null ? clause : clause.replace(braces[0], '');
    const def = outside.replace(/,/g, ' ').trim();
    if (def !== '' && !def.startsWith('*')) names.push('default');
    for (const part of braces?.[1].split(',') ?? []) {
      const spec = part.trim();
      if (spec === '' || spec.startsWith('type ')) continue;
      names.push(spec.split(/\s+as\s+/)[0]);
    }
    found.push({ from: m[3], names });
  }
  return found;
}

describe('README.md code blocks', () => {
  const blocks = codeBlocks(README);

  it('are found, and their imports read as the runtime sees them', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    const code =
      "import { A, type B, C as D } from 'x';\nimport e, { F } from 'y';\nimport type { G } from 'z';";
    expect(importsOf(code)).toEqual([
      { from: 'x', names: ['A', 'C'] },
      { from: 'y', names: ['default', 'F'] },
    ]);
  });

  it.each(blocks.map((code, i) => [i + 1, code.split('\n')[0], code] as const))(
    'block %i (%s) imports only names its modules export',
    async (_n, _first, code) => {
      for (const { from, names } of importsOf(code)) {
        const module = (await import(/* @vite-ignore */ from)) as Record<string, unknown>;
        for (const name of names) expect(module[name], `${name} from '${from}'`).toBeDefined();
      }
    },
  );
});
