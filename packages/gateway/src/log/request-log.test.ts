import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RequestLogging } from '../config/request-logging.js';
import { createLogger } from './create-logger.js';
import { REQUEST_LINE_BATCH, RequestLog, type RequestLogFields } from './request-log.js';

const ALL: RequestLogging = { mode: 'all', share: 1 };
const DENIED: RequestLogging = { mode: 'denied', share: 0 };
const NONE: RequestLogging = { mode: 'none', share: 0 };
const sample = (share: number): RequestLogging => ({ mode: 'sample', share });

function capture(level = 'info') {
  const lines: string[] = [];
  const logger = createLogger(level, { write: (s: string) => void lines.push(s) });
  return { lines, logger };
}

const FIELDS: RequestLogFields = {
  reqId: 'trace-42',
  method: 'GET',
  url: '/api/items?page=2',
  status: 200,
  ms: 1.25,
  outcome: 'proxied',
  key: 'ip:127.0.0.1',
  tier: 'free',
};

/** The line pino writes for the same fields through `logger.info(fields, 'request')`, without its time. */
function pinoLine(fields: RequestLogFields, level = 'info', bindings?: Record<string, unknown>) {
  const { lines, logger } = capture(level);
  (bindings === undefined ? logger : logger.child(bindings)).info({ ...fields }, 'request');
  const { time: _t, ...rest } = JSON.parse(lines[0]) as Record<string, unknown>;
  return rest;
}

function written(lines: string[]): Record<string, unknown>[] {
  return lines.flatMap((l) => l.split('\n').filter((x) => x !== '')).map((l) => JSON.parse(l));
}

describe('the request log', () => {
  it('writes the line pino writes for the same fields, its time as ISO text', () => {
    const { lines, logger } = capture();
    new RequestLog(logger).write(FIELDS);
    expect(lines).toHaveLength(1);
    expect(lines[0].endsWith('}\n')).toBe(true);
    const { time, ...rest } = JSON.parse(lines[0]) as Record<string, unknown>;
    expect(time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(rest).toEqual(pinoLine(FIELDS));
    expect(Object.keys(rest)).toEqual(Object.keys(pinoLine(FIELDS)));
  });

  it('carries the bindings of a child logger (the thread of a threaded gateway)', () => {
    const { lines, logger } = capture();
    new RequestLog(logger.child({ thread: 3 })).write(FIELDS);
    const { time: _t, ...rest } = JSON.parse(lines[0]) as Record<string, unknown>;
    expect(rest).toEqual(pinoLine(FIELDS, 'info', { thread: 3 }));
    expect(rest.thread).toBe(3);
  });

  it('leaves out a missing key and tier, and marks an upgrade', () => {
    const { lines, logger } = capture();
    const log = new RequestLog(logger);
    log.write({ ...FIELDS, key: undefined, tier: undefined });
    log.write({ reqId: 'u1', method: 'GET', url: '/ws', status: 101, outcome: 'proxied', upgrade: true });
    const [first, second] = written(lines);
    expect(first).not.toHaveProperty('key');
    expect(first).not.toHaveProperty('tier');
    expect(second).toMatchObject({ reqId: 'u1', status: 101, upgrade: true, msg: 'request' });
    expect(second).not.toHaveProperty('ms');
  });

  it('masks secrets in the target as the logger does', () => {
    const { lines, logger } = capture();
    new RequestLog(logger).write({ ...FIELDS, url: '/cb?token=s3cret-value&x=1' });
    expect(lines[0]).not.toContain('s3cret-value');
    expect(JSON.parse(lines[0]).url).toBe(pinoLine({ ...FIELDS, url: '/cb?token=s3cret-value&x=1' }).url);
  });

  it('writes what pino writes for any text in its fields (quotes, controls, non-ASCII)', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string({ unit: 'binary' }),
        fc.option(fc.string(), { nil: undefined }),
        fc.integer({ min: 100, max: 599 }),
        (reqId, url, key, status) => {
          const f: RequestLogFields = { ...FIELDS, reqId, url, key, status };
          const { lines, logger } = capture();
          new RequestLog(logger).write(f);
          const { time: _t, ...rest } = JSON.parse(lines[0]) as Record<string, unknown>;
          expect(rest).toEqual(pinoLine(f));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('is independent of the level of the other lines', () => {
    for (const level of ['warn', 'silent']) {
      const { lines, logger } = capture(level);
      const log = new RequestLog(logger);
      expect(log.wants(ALL, 'proxied')).toBe(true);
      log.write(FIELDS);
      expect(written(lines)).toEqual([expect.objectContaining({ level: 30, msg: 'request' })]);
    }
  });
});

describe('which requests the request log keeps', () => {
  const routine = ['proxied', 'own', 'preflight', 'exempt_endpoint', 'exempt_tier'];
  const refused = [
    'rate_limited',
    'blocked',
    'shed',
    'unauthorized',
    'bad_host',
    'error',
    'upstream_timeout',
  ];

  it('all: every request; none: no request; denied: every request not served as asked', () => {
    const log = new RequestLog(capture().logger);
    for (const o of [...routine, ...refused]) {
      expect(log.wants(ALL, o)).toBe(true);
      expect(log.wants(NONE, o)).toBe(false);
      expect(log.wants(DENIED, o)).toBe(refused.includes(o));
    }
  });

  it('a share: every denial, and that share of the other requests spread evenly, the first one kept', () => {
    const log = new RequestLog(capture().logger);
    const kept: number[] = [];
    for (let i = 0; i < 100; i++) {
      expect(log.wants(sample(0.1), 'rate_limited')).toBe(true);
      if (log.wants(sample(0.1), 'proxied')) kept.push(i);
    }
    expect(kept).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
  });

  it('keeps the share it is given over any number of requests, to one line', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100_000 }), fc.integer({ min: 1, max: 5000 }), (ppm, n) => {
        const share = ppm / 1_000_000;
        const log = new RequestLog(capture().logger);
        let kept = 0;
        for (let i = 0; i < n; i++) if (log.wants(sample(share), 'proxied')) kept++;
        expect(Math.abs(kept - n * share)).toBeLessThanOrEqual(1);
      }),
      { numRuns: 100 },
    );
  });
});

describe('request lines written together', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  function batched() {
    const writes: string[] = [];
    const logger = createLogger('info', { write: (s: string) => void writes.push(s) }, { batch: true });
    return { writes, log: new RequestLog(logger) };
  }

  it('writes the lines of many requests in one call, at most a flush interval after the first', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { writes, log } = batched();
    log.write(FIELDS);
    log.write({ ...FIELDS, reqId: 'b' });
    vi.advanceTimersByTime(REQUEST_LINE_BATCH.flushMs / 2);
    log.write({ ...FIELDS, reqId: 'c' });
    expect(writes).toEqual([]);
    vi.advanceTimersByTime(REQUEST_LINE_BATCH.flushMs / 2);
    expect(writes).toHaveLength(1);
    expect(written(writes).map((l) => l.reqId)).toEqual(['trace-42', 'b', 'c']);
    // Nothing pending: no write, and the next line starts a new interval.
    vi.advanceTimersByTime(REQUEST_LINE_BATCH.flushMs * 3);
    expect(writes).toHaveLength(1);
    log.write({ ...FIELDS, reqId: 'd' });
    vi.advanceTimersByTime(REQUEST_LINE_BATCH.flushMs);
    expect(written(writes).map((l) => l.reqId)).toEqual(['trace-42', 'b', 'c', 'd']);
  });

  it('writes at once when the pending lines reach the batch size, and on flush()', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { writes, log } = batched();
    const url = `/${'x'.repeat(1000)}`;
    let n = 0;
    while (writes.length === 0) log.write({ ...FIELDS, reqId: String(n++), url });
    expect(writes[0].length).toBeGreaterThanOrEqual(REQUEST_LINE_BATCH.bytes);
    expect(writes[0].length).toBeLessThan(REQUEST_LINE_BATCH.bytes + 1200);
    log.write({ ...FIELDS, reqId: 'last' });
    log.flush();
    expect(written(writes).map((l) => l.reqId)).toEqual([
      ...Array.from({ length: n }, (_, i) => String(i)),
      'last',
    ]);
    // The timer of the flushed lines finds nothing to write.
    vi.advanceTimersByTime(REQUEST_LINE_BATCH.flushMs);
    expect(writes).toHaveLength(2);
  });

  it('writes each line at once on a destination given without batch', () => {
    const { lines, logger } = capture();
    const log = new RequestLog(logger);
    log.write(FIELDS);
    log.write(FIELDS);
    expect(lines).toHaveLength(2);
  });
});

describe('request lines at exit', () => {
  it('are written when the process ends by process.exit before the flush interval', async () => {
    const { execFileSync } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const here = fileURLToPath(new URL('.', import.meta.url));
    const program = [
      "import { createLogger } from './create-logger.ts';",
      "import { RequestLog } from './request-log.ts';",
      "const log = new RequestLog(createLogger('info'));",
      "for (let i = 0; i < 3; i++) log.write({ reqId: 'r' + i, method: 'GET', url: '/x', status: 200, outcome: 'proxied' });",
      'process.exit(0);',
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], {
      cwd: here,
      encoding: 'utf8',
    });
    expect(written([out]).map((l) => l.reqId)).toEqual(['r0', 'r1', 'r2']);
  });
});
