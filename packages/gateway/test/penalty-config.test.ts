import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigText } from '../src/config/load-config.js';
import { formatViolations } from '../src/config/violation.js';
import { tempDir } from './support.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const BASE = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60 }
`;
const load = (yaml: string) => loadConfigText(yaml, join(tmp.dir, 'p.yaml'), { env: {} });

describe('the penalty: section', () => {
  it('resolves durations and defaults', () => {
    const r = load(`${BASE}penalty:\n  after: 5\n  within: 1m\n  block: 10m\n`);
    expect(r.ok && r.config.penalty).toEqual({
      after: 5,
      withinMs: 60_000,
      blockMs: 600_000,
      maxBlockMs: 14_400_000,
      forgetAfterMs: 86_400_000,
      status: 429,
    });
  });

  it('reports every bad field with file:line:column', () => {
    const r = load(
      `${BASE}penalty:\n  after: 0\n  within: 1m\n  block: 10m\n  maxBlock: 5m\n  status: 404\n  colour: red\n`,
    );
    expect(r.ok).toBe(false);
    const text = r.ok ? '' : formatViolations('p.yaml', r.violations);
    expect(text).toContain('p.yaml:6:10 penalty.after: must be >= 1');
    expect(text).toContain('p.yaml:10:11 penalty.status:');
    expect(text).toMatch(/p\.yaml:11:\d+ penalty(\.colour)?: /);
  });

  it('reports a ceiling below the first block at its line', () => {
    const r = load(`${BASE}penalty:\n  after: 3\n  within: 1m\n  block: 10m\n  maxBlock: 5m\n`);
    expect(r.ok ? '' : formatViolations('p.yaml', r.violations)).toMatch(
      /^p\.yaml:9:\d+ penalty\.maxBlock: must be at least penalty\.block \(10m\)$/,
    );
  });

  it('refuses blocks longer than a block can last (366 days), and caps the default ceiling there', () => {
    const r = load(`${BASE}penalty:\n  after: 3\n  within: 1m\n  block: 9000h\n  maxBlock: 9001h\n`);
    const text = r.ok ? '' : formatViolations('p.yaml', r.violations);
    expect(text).toMatch(/^p\.yaml:8:\d+ penalty\.block: must be at most 8784h \(366 days\)/m);
    expect(text).toMatch(/^p\.yaml:9:\d+ penalty\.maxBlock: must be at most 8784h \(366 days\)/m);
    // 24 x 400h would be 400 days: the ceiling stops at the longest block there is.
    const capped = load(`${BASE}penalty:\n  after: 3\n  within: 1m\n  block: 400h\n`);
    expect(capped.ok && capped.config.penalty?.maxBlockMs).toBe(366 * 86_400_000);
  });
});
