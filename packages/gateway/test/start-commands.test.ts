import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The examples and the documents people copy start commands from. */
function files(): string[] {
  const examples = join(ROOT, 'packages/gateway/examples');
  const guide = join(ROOT, 'docs/guide');
  return [
    ...readdirSync(examples).map((f) => join(examples, f)),
    ...readdirSync(guide)
      .filter((f) => f.endsWith('.md'))
      .map((f) => join(guide, f)),
    ...['README.md', 'packages/gateway/README.md', 'docs/nginx.md', 'docs/security.md', 'Dockerfile'].map(
      (f) => join(ROOT, f),
    ),
  ];
}

describe('start commands in examples and documents', () => {
  it('name a command: `sluice --config ...` prints the help and exits 2', () => {
    // An option right after `sluice` (other than --help and --version) is a command left out.
    const missing = /\bsluice(?:\.js)?\s+--?(?!help\b|version\b|h\b)[a-z]/g;
    const found: string[] = [];
    for (const f of files()) {
      const text = readFileSync(f, 'utf8');
      for (const m of text.matchAll(missing)) found.push(`${f.slice(ROOT.length)}: ${m[0]}`);
    }
    expect(found).toEqual([]);
  });
});
