import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  apiEntries,
  exportedNames,
  readReport,
  reportDifference,
  reportLines,
  UPDATE_VARIABLE,
  writeReport,
} from './support/api-report.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const entries = apiEntries(ROOT);
const update = process.env[UPDATE_VARIABLE] === '1';

/** The names the module has at run time, loaded the way an application loads it (vitest aliases `sluice/*`). */
async function runtimeNames(specifier: string): Promise<string[]> {
  const module: Record<string, unknown> =
    specifier === '@sluice/gateway'
      ? await import('../packages/gateway/src/index.js')
      : await import(/* @vite-ignore */ specifier);
  return Object.keys(module);
}

let compiled: Map<string, string[]>;
beforeAll(() => {
  compiled = exportedNames(
    ROOT,
    entries.map((e) => e.source),
  );
}, 120_000);

describe('the public API report', () => {
  it('lists an entry for every subpath of the sluice package and for the gateway', () => {
    expect(entries.map((e) => e.specifier)).toContain('sluice/http');
    expect(entries.map((e) => e.specifier)).toContain('@sluice/gateway');
  });

  for (const entry of entries) {
    it(`matches docs/api for ${entry.specifier}`, async () => {
      const runtime = await runtimeNames(entry.specifier);
      const all = compiled.get(entry.source) ?? [];
      // A run-time name the compiler does not see would mean the two listings disagree about the module.
      expect(runtime.filter((n) => !all.includes(n))).toEqual([]);
      const actual = reportLines(all, runtime);
      if (update) writeReport(entry, actual);
      const message = reportDifference(entry, relative(ROOT, entry.report), readReport(entry), actual);
      if (message !== '') expect.fail(message);
    });
  }
});

describe('the report difference', () => {
  const entry = { specifier: 'sluice/x', source: '/x/index.ts', report: '/docs/api/sluice-x.txt' };

  it('names what was added and removed and how to update', () => {
    const message = reportDifference(
      entry,
      'docs/api/sluice-x.txt',
      ['a value', 'B type'],
      ['a value', 'c value'],
    );
    expect(message).toContain('Added: c value.');
    expect(message).toContain('Removed: B type.');
    expect(message).toContain('UPDATE_API_REPORT=1 npx vitest run test/api-report.test.ts');
  });

  it('is empty when the report agrees and asks for a report when none exists', () => {
    expect(reportDifference(entry, 'r.txt', ['a value'], ['a value'])).toBe('');
    expect(reportDifference(entry, 'r.txt', undefined, ['a value'])).toContain('no API report at r.txt');
  });

  it('marks names without a run-time value as types, sorted by code unit', () => {
    expect(reportLines(['b', 'A', 'a'], ['a'])).toEqual(['A type', 'a value', 'b type']);
  });
});
