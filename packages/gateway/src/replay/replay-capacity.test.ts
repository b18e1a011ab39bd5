import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../config/gateway-config.js';
import { loadConfigText } from '../config/load-config.js';
import { capacityNotes } from './capacity-notes.js';
import { replayReport } from './replay-report.js';
import { type ReplayLog, runReplay } from './replay-run.js';
import { replayHtml } from './report-html.js';
import { renderReplayText } from './report-text.js';

// The page's shell as the build writes it (the unit suites run before any build): what the report embeds is
// what is checked here, the page itself in replay-report.browser.test.ts.
const PAGE = mkdtempSync(join(tmpdir(), 'sluice-replay-page-'));
writeFileSync(
  join(PAGE, 'index.html'),
  '<link rel="stylesheet" href="app.css"><script type="application/json" id="replay-data">null</script>' +
    '<script type="module" src="app.js"></script>',
);
writeFileSync(join(PAGE, 'app.js'), '');
writeFileSync(join(PAGE, 'app.css'), '');
afterAll(() => rmSync(PAGE, { recursive: true, force: true }));

function config(text: string): GatewayConfig {
  const r = loadConfigText(text, 'test.yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
}

const log = (name: string, text: string): ReplayLog => ({
  name,
  open: () => Readable.from([Buffer.from(text)]),
});

const CONCURRENT = config(`rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 60000, burstLimit: 60000 }
  endpoints:
    - pattern: /api/reports/*
      name: reports
      concurrent: 2
`);

const BASE = Date.UTC(2026, 11, 3, 6, 0, 0);

/** A combined line of one client at `second` past 06:00:00 taking `seconds` (NGINX `$request_time`). */
const nginx = (second: number, seconds: number | undefined, client = '203.0.113.7') =>
  `${client} - - [03/Dec/2026:06:00:${String(second).padStart(2, '0')} +0000] "GET /api/reports/1 HTTP/1.1" 200 12 "-" "curl/8.5"${seconds === undefined ? '' : ` ${seconds.toFixed(3)}`}`;

async function replay(cfg: GatewayConfig, lines: readonly string[], format?: 'json') {
  const run = await runReplay({
    config: { name: 'c.yaml', config: cfg },
    logs: [log('a.log', lines.join('\n'))],
    ...(format === undefined ? {} : { format }),
  });
  return replayReport(run);
}

describe('sluice replay holds concurrency slots for each request duration', () => {
  it('three overlapping long requests of one client against concurrent: 2: the third is limited, slots come back at start + duration', async () => {
    const r = await replay(CONCURRENT, [
      nginx(0, 10), // holds until :10
      nginx(1, 10), // holds until :11
      nginx(2, 1), // both slots held: limited
      nginx(9, 1), // still both held: limited
      nginx(10, 1), // the first ended at :10: allowed
      nginx(10, 1, '198.51.100.1'), // another client has slots of its own
    ]);
    expect(r.totals).toMatchObject({ requests: 6, allowed: 4, limited: 2 });
    expect(r.policies.find((p) => p.policy === 'reports')).toMatchObject({ limitedHere: 2 });
    expect(r.capacity).toEqual({
      concurrency: { replayed: true, held: 4, withoutDuration: 0, endedEarly: 0 },
    });
  });

  it('a slot whose request ended at the millisecond another starts is free for it', async () => {
    const at = (durationMs: number) =>
      JSON.stringify({
        time: new Date(BASE).toISOString(),
        path: '/api/reports/x',
        client: '203.0.113.1',
        duration: durationMs,
      });
    const r = await replay(CONCURRENT, [at(0), at(0), at(5), at(5), at(5)], 'json');
    // The two of no duration ended as they started: the next two take the slots, the fifth finds none.
    expect(r.totals).toMatchObject({ requests: 5, allowed: 4, limited: 1 });
  });

  it('keeps the duration of each line when several logs are merged by time', async () => {
    const run = await runReplay({
      config: { name: 'c.yaml', config: CONCURRENT },
      logs: [
        log('a.log', [nginx(0, 10), nginx(2, 1)].join('\n')),
        log('b.log', [nginx(1, 10), nginx(10, 1)].join('\n')),
      ],
    });
    // :00 and :01 hold both slots until :10 and :11; :02 is limited; :10 finds the first slot back.
    expect(replayReport(run).totals).toMatchObject({ requests: 4, allowed: 3, limited: 1 });
  });

  it('matches a reference simulation of slots for any overlapping requests (property)', async () => {
    const request = fc.record({
      // Zero gaps and durations often: requests of the same millisecond, ends at another's start.
      gapMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 400 })),
      durationMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2000 })),
      client: fc.integer({ min: 0, max: 2 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 40 }), async (reqs) => {
        let t = BASE;
        const lines: string[] = [];
        const expected: boolean[] = [];
        const held = new Map<number, number[]>();
        for (const q of reqs) {
          t += q.gapMs;
          lines.push(
            JSON.stringify({
              time: new Date(t).toISOString(),
              path: '/api/reports/x',
              client: `203.0.113.${q.client + 1}`,
              duration: q.durationMs,
            }),
          );
          // The reference: a slot is free again at start + duration, at most 2 held per client.
          const ends = (held.get(q.client) ?? []).filter((end) => end > t);
          const admitted = ends.length < 2;
          if (admitted) ends.push(t + q.durationMs);
          held.set(q.client, ends);
          expected.push(admitted);
        }
        const r = await replay(CONCURRENT, lines, 'json');
        const allowed = expected.filter(Boolean).length;
        expect(r.totals).toMatchObject({ requests: reqs.length, allowed, limited: reqs.length - allowed });
        expect(r.capacity?.concurrency).toMatchObject({ held: allowed, withoutDuration: 0 });
      }),
      { numRuns: 100 },
    );
  });

  it('a log without durations: the report says concurrency was not replayed (text, JSON, HTML)', async () => {
    const r = await replay(CONCURRENT, [nginx(0, undefined), nginx(0, undefined), nginx(0, undefined)]);
    // Each slot came back at once: nothing limited, and the report says why.
    expect(r.totals).toMatchObject({ requests: 3, allowed: 3, limited: 0 });
    expect(r.capacity?.concurrency).toMatchObject({ replayed: false, held: 0, withoutDuration: 3 });
    expect(JSON.parse(JSON.stringify(r)).capacity.concurrency.replayed).toBe(false);
    expect(renderReplayText(r)).toMatch(/concurrency: not replayed for 3 requests/);
    // The page writes its notices from the report it embeds.
    expect(replayHtml(r, PAGE)).toContain(
      '"capacity":{"concurrency":{"replayed":false,"held":0,"withoutDuration":3',
    );
    expect(capacityNotes(r).join('\n')).toMatch(/concurrency: not replayed for 3 requests/);
  });

  it('load shedding (overload:) is always reported as not replayed', async () => {
    const cfg = config(`overload:
  maxInFlight: 200
rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 600 }
`);
    const r = await replay(cfg, [nginx(0, 1)]);
    expect(r.capacity).toEqual({ overload: { replayed: false } });
    expect(renderReplayText(r)).toMatch(/load shedding \(overload:\): not replayed/);
    expect(replayHtml(r, PAGE)).toContain('"capacity":{"overload":{"replayed":false}}');
    expect(capacityNotes(r).join('\n')).toMatch(/load shedding \(overload:\): not replayed/);
  });

  it('a configuration without concurrency limits or overload says nothing of capacity', async () => {
    const cfg = config(`rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 600 }
`);
    const r = await replay(cfg, [nginx(0, 1)]);
    expect(r.capacity).toBeUndefined();
    expect(renderReplayText(r)).not.toMatch(/not replayed/);
  });
});
