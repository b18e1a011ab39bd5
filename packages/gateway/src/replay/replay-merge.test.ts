import { Readable } from 'node:stream';
import fc from 'fast-check';
import type { Verdict } from 'sluice/http';
import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../config/gateway-config.js';
import { loadConfigText } from '../config/load-config.js';
import { replayReport } from './replay-report.js';
import { type ReplayLog, runReplay } from './replay-run.js';

const YAML = `rateLimiting:
  enabled: true
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 6, burstLimit: 3 }
  endpoints:
    - pattern: /b/*
      limit: 2
      window: 10s
`;

function config(): GatewayConfig {
  const r = loadConfigText(YAML, 'merge.yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
}

/** One request: seconds after 06:00:00, a client out of three, a path out of two. */
interface Req {
  readonly at: number;
  readonly client: number;
  readonly path: number;
}

const line = (r: Req) => {
  const t = new Date(Date.UTC(2026, 11, 3, 6, 0, r.at)).toISOString().slice(11, 19);
  return `10.0.0.${r.client} - - [03/Dec/2026:${t} +0000] "GET /${r.path === 0 ? 'a' : 'b/x'} HTTP/1.1" 200 1 "-" "t"`;
};

const log = (name: string, reqs: readonly Req[], chunk = 97): ReplayLog => ({
  name,
  // Cut into small reads, so that the logs' reads interleave.
  open: () => {
    const text = Buffer.from(reqs.map((r) => `${line(r)}\n`).join(''));
    const parts: Buffer[] = [];
    for (let i = 0; i < text.length; i += chunk) parts.push(text.subarray(i, i + chunk));
    return Readable.from(parts);
  },
});

/** Each decision as the line, the log and the action it got, in the order they were made. */
async function decisions(logs: readonly ReplayLog[]): Promise<string[]> {
  const out: string[] = [];
  await runReplay({
    config: { name: 'c', config: config() },
    logs,
    onDecision: (r, v) => {
      const act = (x: Verdict) => `${r.timeMs} ${r.clientIp} ${r.target} ${x.action}`;
      if (!(v instanceof Promise)) out.push(act(v));
    },
  });
  return out;
}

const sortedReqs = fc
  .array(fc.record({ at: fc.nat(120), client: fc.nat(2), path: fc.nat(1) }), { maxLength: 40 })
  .map((rs) => [...rs].sort((x, y) => x.at - y.at));

describe('several logs', () => {
  it('are merged by time: decisions as one log sorted by time, ties in the order the logs were given', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(sortedReqs, { minLength: 2, maxLength: 4 }), async (parts) => {
        const merged = parts
          .flatMap((rs, i) => rs.map((r, j) => ({ r, i, j })))
          .sort((x, y) => x.r.at - y.r.at || x.i - y.i || x.j - y.j)
          .map((e) => e.r);
        const one = await decisions([log('all.log', merged)]);
        const many = await decisions(parts.map((rs, i) => log(`part${i}.log`, rs, 61 + i * 13)));
        expect(many).toEqual(one);
      }),
      { numRuns: 80 },
    );
  });

  it('hold a bounded number of lines ahead: long logs read in large pieces wait for the merge and go on', async () => {
    // 5,000 lines a log, beyond the 2,048 records a log's reader holds before it waits; the logs run at different
    // paces, so the later ones fill up while the merge takes the first one's lines.
    const parts = [0, 1, 2].map((k) =>
      Array.from({ length: 5000 }, (_, i) => ({
        at: Math.floor((i * (k + 1)) / 40),
        client: (i + k) % 3,
        path: i % 2,
      })),
    );
    const merged = parts
      .flatMap((rs, i) => rs.map((r, j) => ({ r, i, j })))
      .sort((x, y) => x.r.at - y.r.at || x.i - y.i || x.j - y.j)
      .map((e) => e.r);
    const one = await decisions([log('all.log', merged, 65536)]);
    const many = await decisions(parts.map((rs, i) => log(`part${i}.log`, rs, 65536 - i * 1000)));
    expect(many.length).toBe(15000);
    expect(many).toEqual(one);
  });

  it('rotated in any order (access.log before access.log.1, as a shell glob lists them) replay as one', async () => {
    const hour = Array.from({ length: 60 }, (_, i) => ({
      at: i * 2,
      client: i % 2,
      path: i % 3 === 0 ? 1 : 0,
    }));
    const older = hour.slice(0, 30);
    const newer = hour.slice(30);
    const expected = replayReport(
      await runReplay({ config: { name: 'c', config: config() }, logs: [log('whole.log', hour)] }),
    );
    const run = await runReplay({
      config: { name: 'c', config: config() },
      logs: [log('access.log', newer), log('access.log.1', older)],
    });
    const r = replayReport(run);
    expect(r.totals).toEqual(expected.totals);
    expect(r.outOfOrder.lines).toBe(0);
    // Each log keeps its own counts.
    expect(r.logs.map((l) => [l.name, l.lines, l.requests])).toEqual([
      ['access.log', 30, 30],
      ['access.log.1', 30, 30],
    ]);
  });

  it('keep their own unknown lines, formats and errors while merged', async () => {
    const good = [
      { at: 0, client: 1, path: 0 },
      { at: 5, client: 1, path: 0 },
    ].map(line);
    const a: ReplayLog = { name: 'a.log', open: () => Readable.from([`${good[0]}\nnonsense\n${good[1]}\n`]) };
    const missing: ReplayLog = {
      name: 'missing.log',
      open: () => {
        throw new Error('ENOENT: no such file');
      },
    };
    const b: ReplayLog = { name: 'b.log', open: () => Readable.from([`junk\n${good[0]}\n`]) };
    const r = replayReport(
      await runReplay({ config: { name: 'c', config: config() }, logs: [a, missing, b] }),
    );
    expect(
      r.logs.map((l) => [l.name, l.format, l.lines, l.requests, l.unknown, l.unknownLines, l.error]),
    ).toEqual([
      ['a.log', 'combined', 3, 2, 1, [2], undefined],
      ['missing.log', undefined, 0, 0, 0, [], 'ENOENT: no such file'],
      ['b.log', 'combined', 2, 1, 1, [1], undefined],
    ]);
    expect(r.totals.requests).toBe(3);
  });
});
