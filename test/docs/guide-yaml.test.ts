/**
 * The YAML blocks of the guides that show a whole configuration (they define tiers) pass `sluice validate` as
 * copied: a reader pastes them into rate-limits.yaml. Blocks without tiers are fragments of a larger file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfigText } from '../../packages/gateway/src/config/load-config.js';

const GUIDE = fileURLToPath(new URL('../../docs/guide/', import.meta.url));

/** Every ```yaml block of the guides that defines `rateLimiting.tiers`, with its file and line. */
const blocks = readdirSync(GUIDE)
  .filter((f) => f.endsWith('.md'))
  .flatMap((f) => {
    const text = readFileSync(GUIDE + f, 'utf8');
    return [...text.matchAll(/```yaml\n([\s\S]*?)```/g)]
      .filter((m) => /^rateLimiting:\n(?:[ #].*\n)*? {2}tiers:/m.test(m[1] as string))
      .map((m) => ({ at: `${f}:${text.slice(0, m.index).split('\n').length}`, yaml: m[1] as string }));
  });

describe('whole configurations in the guides', () => {
  it('include the load-shedding example of capacity.md', () => {
    expect(
      blocks.filter((b) => b.at.startsWith('capacity.md:') && b.yaml.startsWith('overload:')),
    ).toHaveLength(1);
  });

  it.each(blocks)('$at passes validation as copied', ({ at, yaml }) => {
    const r = loadConfigText(yaml, at, { env: { SLUICE_ADMIN_TOKEN: 'admin-token-0123456789' } });
    expect(r.violations).toEqual([]);
  });
});
