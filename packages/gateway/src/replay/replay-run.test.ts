import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../config/gateway-config.js';
import { loadConfigText } from '../config/load-config.js';
import { replayReport } from './replay-report.js';
import { type ReplayLog, runReplay } from './replay-run.js';
import { renderReplayText } from './report-text.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/rate-limits.yaml', import.meta.url));

function config(text = readFileSync(EXAMPLE, 'utf8')): GatewayConfig {
  const r = loadConfigText(text, 'test.yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
}

const log = (name: string, text: string | Buffer): ReplayLog => ({
  name,
  open: () => Readable.from([Buffer.from(text)]),
});

const studio = (time: string, ip = '203.0.113.7') =>
  `${ip} - - [03/Dec/2026:${time} +0000] "POST /api/risk/simulation/studio/run HTTP/1.1" 200 12 "-" "curl/8.5"`;

/** Ten requests at 06:00:00 use the studio rule's 10 tokens (10 per 60 s: one token every 6 s). */
const STUDIO_LOG = [
  ...Array.from({ length: 10 }, () => studio('06:00:00')),
  studio('06:00:03'), // half a token back: 3 s until a whole one
  studio('06:00:05'), // five sixths of a token back: 1 s until a whole one
].join('\n');

describe('sluice replay', () => {
  it('gives the hand-computed 10/2 split of 12 requests to the studio rule, with their Retry-After', async () => {
    const run = await runReplay({
      config: { name: 'example', config: config() },
      logs: [log('studio.log', STUDIO_LOG)],
    });
    const r = replayReport(run);
    expect(r.totals).toMatchObject({ requests: 12, allowed: 10, limited: 2, queued: 0 });
    expect(r.firstLimited.map((s) => [s.line, s.time, s.retryAfter, s.policies])).toEqual([
      [11, '2026-12-03T06:00:03.000Z', 3, ['/api/risk/simulation/studio/*']],
      [12, '2026-12-03T06:00:05.000Z', 1, ['/api/risk/simulation/studio/*']],
    ]);
    expect(r.limitedKeys).toEqual([
      expect.objectContaining({
        key: 'ip:203.0.113.7',
        count: 2,
        first: '2026-12-03T06:00:03.000Z',
        last: '2026-12-03T06:00:05.000Z',
        maxRetryAfter: 3,
      }),
    ]);
    expect(r.logs[0]).toMatchObject({ format: 'combined', lines: 12, requests: 12, unknown: 0 });
  });

  it('reads gzip (by its magic bytes, whatever the name), CRLF lines and standard input alike', async () => {
    const text = `${STUDIO_LOG.replaceAll('\n', '\r\n')}\r\n`;
    const run = await runReplay({
      config: { name: 'example', config: config() },
      logs: [log('a.log', gzipSync(text)), log('stdin', text)],
    });
    const r = replayReport(run);
    expect(r.logs.map((l) => [l.gzip, l.requests, l.unknown])).toEqual([
      [true, 12, 0],
      [false, 12, 0],
    ]);
    // The second log continues the first's buckets at the same times: all of its requests are limited.
    expect(r.totals).toMatchObject({ requests: 24, allowed: 10, limited: 14 });
  });

  it('counts unknown and truncated lines with their numbers and goes on; a truncated gzip keeps what it read', async () => {
    const lines = [
      studio('06:00:00'),
      'garbage',
      studio('06:00:01').slice(0, 60),
      '',
      studio('06:00:02'),
      '\u0000\u0001binary',
      'x'.repeat(70_000),
      studio('06:00:03'),
      'a',
      'b',
      'c',
    ];
    const r = replayReport(
      await runReplay({
        config: { name: 'example', config: config() },
        logs: [log('mixed.log', lines.join('\n'))],
      }),
    );
    expect(r.logs[0]).toMatchObject({
      lines: 11,
      requests: 3,
      blank: 1,
      unknown: 7,
      unknownLines: [2, 3, 6, 7, 9],
    });
    const gz = gzipSync(Array.from({ length: 2000 }, () => studio('06:00:00')).join('\n'));
    const cut = await runReplay({
      config: { name: 'example', config: config() },
      logs: [log('cut.log.gz', gz.subarray(0, gz.length - 20))],
    });
    expect(cut.logs[0].error).toMatch(/unexpected end of file/);
    expect(cut.logs[0].requests).toBeGreaterThan(1000);
  });

  it('decides a line beyond the reorder window at the later time, and counts it', async () => {
    const r = replayReport(
      await runReplay({
        config: { name: 'example', config: config() },
        logs: [log('late.log', [studio('06:00:10'), studio('06:00:08'), studio('06:00:11')].join('\n'))],
        reorderWindowMs: 0,
      }),
    );
    expect(r.outOfOrder).toEqual({ lines: 1, maxSeconds: 2, windowSeconds: 0, reordered: 0, early: 0 });
    expect(r.span).toEqual({ from: '2026-12-03T06:00:10.000Z', to: '2026-12-03T06:00:11.000Z', seconds: 1 });
    // Within the default window the same line is put back in order.
    const within = replayReport(
      await runReplay({
        config: { name: 'example', config: config() },
        logs: [log('late.log', [studio('06:00:10'), studio('06:00:08'), studio('06:00:11')].join('\n'))],
      }),
    );
    expect(within.outOfOrder).toEqual({
      lines: 0,
      maxSeconds: 0,
      windowSeconds: 120,
      reordered: 1,
      early: 0,
    });
    expect(within.span?.from).toBe('2026-12-03T06:00:08.000Z');
  });

  it('decides a log that can be read again as one read once: its first late line starts the replay over', async () => {
    // In order for 300 lines, then one 30 s late: a short first window would decide it late.
    const body = [
      ...Array.from({ length: 300 }, (_, i) =>
        studio(
          `06:${String(Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}`,
          `198.51.100.${i % 3}`,
        ),
      ),
      studio('06:04:30', '198.51.100.1'),
    ].join('\n');
    const reports = await Promise.all(
      [false, true].map(async (readOnce) =>
        replayReport(
          await runReplay({
            config: { name: 'example', config: config() },
            logs: [{ ...log('late.log', body), readOnce }],
          }),
        ),
      ),
    );
    expect(reports[0]).toEqual(reports[1]);
    expect(reports[0].outOfOrder).toEqual({
      lines: 0,
      maxSeconds: 0,
      windowSeconds: 120,
      reordered: 1,
      early: 0,
    });
    expect(reports[0].logs[0]).toMatchObject({ lines: 301, requests: 301 });
  });

  it('decides lines written at their request end but stamped at its start as a live gateway decided them in time order', async () => {
    // 800 requests of 3 clients at distinct seconds of 20 minutes against the studio rule (10 per minute: each
    // client sends 13), each taking up to 59 s: a web server writes each line when its request ends.
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x80000000;
    };
    const seconds = Array.from({ length: 1200 }, (_, i) => i)
      .sort(() => rnd() - 0.5)
      .slice(0, 800);
    const reqs = seconds.map((s, id) => ({ id, start: s, end: s + Math.floor(rnd() * 60), client: id % 3 }));
    const text = (order: typeof reqs) =>
      order
        .map((q) => {
          const t = `06:${String(Math.floor(q.start / 60)).padStart(2, '0')}:${String(q.start % 60).padStart(2, '0')}`;
          return `198.51.100.${q.client} - - [03/Dec/2026:${t} +0000] "POST /api/risk/simulation/studio/run?id=${q.id} HTTP/1.1" 200 1 "-" "t"`;
        })
        .join('\n');
    const decisions = async (body: string, reorderWindowMs?: number) => {
      const seen = new Map<string, string>();
      const run = await runReplay({
        config: { name: 'example', config: config() },
        logs: [log('apache.log', body)],
        ...(reorderWindowMs === undefined ? {} : { reorderWindowMs }),
        onDecision: (r, v) => {
          if (!(v instanceof Promise)) seen.set(r.target, v.action);
        },
      });
      return { seen, report: replayReport(run) };
    };
    const live = await decisions(text([...reqs].sort((x, y) => x.start - y.start)));
    const written = text([...reqs].sort((x, y) => x.end - y.end || x.id - y.id));
    const replayed = await decisions(written);
    expect(live.report.totals.limited).toBeGreaterThan(20);
    expect(replayed.seen).toEqual(live.seen);
    expect(replayed.report.totals).toEqual(live.report.totals);
    expect(replayed.report.outOfOrder.lines).toBe(0);
    expect(replayed.report.outOfOrder.reordered).toBeGreaterThan(100);
    // A window shorter than the requests: the lines beyond it are counted and shown.
    const short = await decisions(written, 10_000);
    expect(short.report.outOfOrder.lines).toBeGreaterThan(0);
    expect(short.report.outOfOrder.maxSeconds).toBeGreaterThan(10);
    expect(short.report.outOfOrder.maxSeconds).toBeLessThan(60);
    const shown = renderReplayText(short.report);
    expect(shown).toContain(
      `${short.report.outOfOrder.lines} lines were earlier than the reorder window of 10 s allows (at most ${short.report.outOfOrder.maxSeconds} s earlier than a line before them) and were decided at the later time: --reorder-window ${Math.ceil(short.report.outOfOrder.maxSeconds)}s would order them`,
    );
  });

  it('drops full buckets on the sweep interval once the table is half full, as the gateway does, and not below', async () => {
    const item = (time: string, i: number) =>
      `198.51.100.${i} - - [03/Dec/2026:${time} +0000] "GET /api/items HTTP/1.1" 200 12 "-" "curl/8.5"`;
    // 30 clients of the standard tier take a minute and an hour bucket each; two minutes on, every one of them is
    // full again (a full bucket decides like a missing one), and one more line passes the sweep interval.
    const lines = [...Array.from({ length: 30 }, (_, i) => item('06:00:00', i)), item('06:02:00', 99)];
    const sizes: number[] = [];
    for (const cap of [100, 1000]) {
      const text = `${readFileSync(EXAMPLE, 'utf8')}\nratelimit:\n  max_tracked_keys: ${cap}\n  sweep_interval: 60s\n`;
      const run = await runReplay({
        config: { name: 'example', config: config(text) },
        logs: [log('items.log', lines.join('\n'))],
      });
      expect(replayReport(run).totals).toMatchObject({ requests: 31, allowed: 31 });
      sizes.push(run.engine.store.size);
    }
    // Cap 100: 60 buckets are over half of it, so the full ones went (the new client's two are left). Cap 1000:
    // far below half, where no eviction is near, nothing is dropped.
    expect(sizes).toEqual([2, 62]);
  });

  it('admits a request that waits in a queue when the log passes its turn, without sleeping', async () => {
    const yaml = `rateLimiting:
  enabled: true
  defaultTier: standard
  tiers:
    standard: { requestsPerMinute: 600 }
  endpoints:
    - pattern: /q
      limit: 1
      window: 60s
      queue: { limit: 2, maxWait: 300s }
`;
    const q = (t: string) => `192.0.2.1 - - [03/Dec/2026:${t} +0000] "GET /q HTTP/1.1" 200 1`;
    const r = replayReport(
      await runReplay({
        config: { name: 'queue', config: config(yaml) },
        logs: [
          log(
            'q.log',
            [q('06:00:00'), q('06:00:00'), q('06:00:00'), q('06:00:00'), q('06:05:00')].join('\n'),
          ),
        ],
      }),
    );
    // One at once, two wait (60 s and 120 s), the fourth finds the queue full; five minutes later one is free.
    expect(r.totals).toMatchObject({ requests: 5, allowed: 2, queued: 2, limited: 1 });
  });

  it('lists the requests that flip against another configuration, per policy and key', async () => {
    const strict = readFileSync(EXAMPLE, 'utf8').replace(/limit: 10\n/, 'limit: 5\n');
    const run = await runReplay({
      config: { name: 'example', config: config() },
      against: { name: 'strict', config: config(strict) },
      logs: [log('studio.log', `${STUDIO_LOG}\n${studio('06:00:00', '198.51.100.4')}`)],
    });
    const x = replayReport(run).against!;
    expect(x.totals).toMatchObject({ requests: 13, allowed: 6, limited: 7 });
    expect(x.flips).toMatchObject({
      toLimited: 5,
      toAllowed: 0,
      policies: [{ policy: '/api/risk/simulation/studio/*', toLimited: 5, toAllowed: 0 }],
      keys: [{ key: 'ip:203.0.113.7', toLimited: 5, toAllowed: 0 }],
    });
  });

  it('keys each request of the gateway log by the caller the gateway saw', async () => {
    const g = (key: string, tier: string) =>
      JSON.stringify({
        level: 30,
        time: '2026-12-03T06:00:00.000Z',
        service: 'sluice',
        method: 'POST',
        url: '/api/risk/simulation/studio/x',
        status: 200,
        outcome: 'proxied',
        key,
        tier,
        msg: 'request',
      });
    const lines = [
      JSON.stringify({ level: 30, time: '2026-12-03T05:59:59.000Z', service: 'sluice', msg: 'listening' }),
      ...Array.from({ length: 11 }, () => g('tenant:acme:client:web', 'enterprise')),
      ...Array.from({ length: 11 }, () => g('ip:192.0.2.9', 'standard')),
    ];
    const r = replayReport(
      await runReplay({
        config: { name: 'example', config: config() },
        logs: [log('gw.log', lines.join('\n'))],
      }),
    );
    expect(r.logs[0]).toMatchObject({ format: 'gateway', skipped: 1, requests: 22 });
    expect(r.tiers.map((t) => [t.tier, t.allowed, t.limited])).toEqual([
      ['enterprise', 10, 1],
      ['standard', 10, 1],
    ]);
    expect(r.limitedKeys.map((k) => k.key).sort()).toEqual(['ip:192.0.2.9', 'tenant:acme:client:web']);
  });

  it('decides each line with its own caller, address and path when callers alternate line by line', async () => {
    const g = (key: string, tier: string, url: string) =>
      JSON.stringify({
        level: 30,
        time: '2026-12-03T06:00:00.000Z',
        service: 'sluice',
        method: 'POST',
        url,
        status: 200,
        outcome: 'proxied',
        key,
        tier,
        msg: 'request',
      });
    const callers = [
      ['tenant:acme:client:web', 'enterprise', '/api/risk/simulation/studio/x'],
      ['ip:192.0.2.9', 'standard', '/api/items'],
      ['ip:192.0.2.10', 'standard', '/system/airgap/seal'],
    ] as const;
    const lines = Array.from({ length: 12 }, (_, i) => {
      const [key, tier, url] = callers[i % 3];
      return g(key, tier, url);
    });
    const seen: [string | undefined, readonly string[] | undefined][] = [];
    await runReplay({
      config: { name: 'example', config: config() },
      logs: [log('gw.log', lines.join('\n'))],
      onDecision: (_r, d) => {
        if (d instanceof Promise) throw new Error('no request of this log waits');
        seen.push([d.key, d.rules]);
      },
    });
    expect(seen.map(([key]) => key)).toEqual(Array.from({ length: 12 }, (_, i) => callers[i % 3][0]));
    expect(seen.slice(0, 3).map(([, rules]) => rules?.length)).toEqual([3, 1, 2]);
  });
});
