import { MAX_OVERRIDE_SECONDS } from 'sluice';
import { durationMs } from './duration.js';
import type { PenaltyConfig } from './gateway-config.js';
import type { SemanticIssue } from './semantic-issue.js';

const LONGEST_MS = MAX_OVERRIDE_SECONDS * 1000;
const LONGEST_HOURS = MAX_OVERRIDE_SECONDS / 3600;

// The raw `penalty:` section after schema validation.
// biome-ignore lint/suspicious/noExplicitAny: schema-validated YAML data, read field by field below
type Raw = Record<string, any>;

/**
 * The `penalty:` section (automatic blocks of keys limited too often), with the durations the schema cannot
 * order: `block` and `within` at least 1 s, `maxBlock` at least `block`, and no block longer than a block can
 * last (366 days, the longest override; `maxBlock` defaults to 24 times `block`, at most that).
 *
 * @param p - the section as the schema passed it, or `undefined` when absent.
 * @param issues - where problems go, with their path.
 * @returns the frozen section, or `undefined` when absent.
 */
export function resolvePenalty(p: Raw | undefined, issues: SemanticIssue[]): PenaltyConfig | undefined {
  if (p === undefined) return undefined;
  const blockMs = durationMs(p.block) ?? 0;
  const withinMs = durationMs(p.within) ?? 0;
  const maxBlockMs = durationMs(p.maxBlock) ?? Math.min(blockMs * 24, LONGEST_MS);
  if (blockMs < 1000) issues.push({ path: ['penalty', 'block'], message: 'must be at least 1s' });
  if (withinMs < 1000) issues.push({ path: ['penalty', 'within'], message: 'must be at least 1s' });
  // A block is an override with a time to live: a longer one would be refused each time it is due.
  for (const [field, ms] of [
    ['block', blockMs],
    ['maxBlock', maxBlockMs],
  ] as const) {
    if (ms > LONGEST_MS) {
      issues.push({
        path: ['penalty', field],
        message: `must be at most ${LONGEST_HOURS}h (366 days), got ${typeof p[field] === 'number' ? `${p[field]} (seconds)` : p[field]}`,
      });
    }
  }
  if (maxBlockMs < blockMs && blockMs <= LONGEST_MS) {
    issues.push({ path: ['penalty', 'maxBlock'], message: `must be at least penalty.block (${p.block})` });
  }
  return Object.freeze({
    after: p.after as number,
    withinMs,
    blockMs,
    maxBlockMs,
    forgetAfterMs: durationMs(p.forgetAfter) ?? 86_400_000,
    status: (p.status ?? 429) as 403 | 429,
  });
}
