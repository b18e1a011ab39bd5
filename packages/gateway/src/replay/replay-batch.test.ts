import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import type { Verdict } from 'sluice/http';
import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../config/gateway-config.js';
import { loadConfigText } from '../config/load-config.js';
import { clfParser } from './clf-parser.js';
import { LogRecord } from './log-record.js';
import { outcomeOf, REPLAY_BATCH, ReplayEngine } from './replay-engine.js';
import { replayReport } from './replay-report.js';
import { runReplay } from './replay-run.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/rate-limits.yaml', import.meta.url));

function config(maxTrackedKeys?: number): GatewayConfig {
  const r = loadConfigText(readFileSync(EXAMPLE, 'utf8'), 'test.yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return maxTrackedKeys === undefined ? r.config : { ...r.config, maxTrackedKeys };
}

const CLIENTS = [
  '203.0.113.7',
  '203.0.113.8',
  '203.0.113.9',
  '198.51.100.1',
  '2001:db8::1',
  '[2001:db8::2]:443',
  'host.example',
  '-',
];
const PATHS = [
  '/api/risk/simulation/studio/run',
  '/api/risk/simulation/7',
  '/system/airgap/seal',
  '/api/items',
  '/api/../x',
];

/** A log line: a request of one of a few clients and paths a few seconds after the last, or a broken line. */
const line = fc.oneof(
  { weight: 9, arbitrary: fc.tuple(fc.constantFrom(...CLIENTS), fc.constantFrom(...PATHS), fc.nat(3)) },
  { weight: 1, arbitrary: fc.constantFrom('garbage', '', '203.0.113.7 - - [bad]') },
);

function render(lines: readonly (string | [string, string, number])[]): string {
  let t = Date.UTC(2026, 11, 3, 6, 0, 0);
  return lines
    .map((l) => {
      if (typeof l === 'string') return l;
      const [client, path, step] = l;
      // Now and then a second back: the engine decides such a line at the later time and counts it.
      t += step === 3 ? -1000 : step * 1000;
      const d = new Date(t);
      const hms = d.toISOString().slice(11, 19);
      return `${client} - - [03/Dec/2026:${hms} +0000] "POST ${path} HTTP/1.1" 200 1 "-" "t"`;
    })
    .join('\n');
}

/** What each line got, deciding one line at a time through the engine's `admit`. */
function oneByOne(text: string, keyCap?: number): { outcomes: string[]; report: unknown } {
  const engine = new ReplayEngine(config(keyCap));
  const parse = clfParser();
  const rec = new LogRecord();
  const outcomes: string[] = [];
  text.split('\n').forEach((l, i) => {
    rec.clear();
    if (l.trim() === '' || parse(l, rec) !== true) return;
    const v = engine.admit(rec, i + 1, 'x.log') as Verdict;
    outcomes.push(`${i + 1}:${outcomeOf(v)}:${v.key ?? ''}`);
  });
  return { outcomes, report: engine.tally };
}

describe('replay in batches', () => {
  // A key cap of a few buckets makes decisions evict each other's buckets inside a batch, and the places the
  // engine keeps per client (D-G72) go stale: every line must still decide as alone.
  it.each([
    ['the example key cap', undefined],
    ['a key cap of a few buckets', 6],
  ])(
    'decides every line as one-at-a-time admission does, whatever the batch boundaries, under %s (property)',
    async (_cap, keyCap) => {
      await fc.assert(
        fc.asyncProperty(fc.array(line, { maxLength: REPLAY_BATCH * 3 + 5 }), async (lines) => {
          const text = render(lines);
          const outcomes: string[] = [];
          const run = await runReplay({
            config: { name: 'x', config: config(keyCap) },
            logs: [{ name: 'x.log', open: () => Readable.from([Buffer.from(text)]) }],
            // Lines as they come, as one-at-a-time admission takes them (the window has suites of its own).
            reorderWindowMs: 0,
            onDecision: (_r, v) => {
              const d = v as Verdict;
              outcomes.push(`${outcomeOf(d)}:${d.key ?? ''}`);
            },
          });
          const expected = oneByOne(text, keyCap);
          expect(outcomes).toEqual(expected.outcomes.map((o) => o.slice(o.indexOf(':') + 1)));
          expect(run.engine.tally).toEqual(expected.report);
          const report = replayReport(run);
          expect(report.totals.requests).toBe(expected.outcomes.length);
        }),
        { numRuns: 150 },
      );
    },
  );
});
