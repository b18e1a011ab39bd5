/**
 * Every problem `code` the sources write (`code: 'snake_case'` in a problem object) is documented in
 * docs/errors.md, so a client meeting one can look it up. Comments (examples) are not code.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

const codes = new Set(
  ['packages/sluice/src', 'packages/gateway/src'].flatMap(sources).flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line))
      .flatMap((line) => [...line.matchAll(/\bcode: '([a-z][a-z_]*)'/g)].map((m) => m[1] as string)),
  ),
);
const errors = readFileSync(join(ROOT, 'docs/errors.md'), 'utf8');

describe('docs/errors.md', () => {
  it('finds the problem codes of the sources', () => {
    expect([...codes]).toContain('blocked');
    expect([...codes]).toContain('queue_abandoned');
  });

  it('documents every problem code the sources write', () => {
    expect([...codes].filter((c) => !errors.includes(`| \`${c}\` |`)).sort()).toEqual([]);
  });
});
