import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from './main.js';

const dir = mkdtempSync(join(tmpdir(), 'sluice-duration-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CONFIG = join(dir, 'reports.yaml');
writeFileSync(
  CONFIG,
  `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 6000, burstLimit: 6000 }
  endpoints:
    - pattern: /api/reports/*
      name: reports
      concurrent: 1
`,
);

/** An Apache combined line with `%T` (whole seconds) at the end. */
const apache = (second: string, seconds: number) =>
  `203.0.113.7 - - [03/Dec/2026:06:00:${second} +0000] "GET /api/reports/1 HTTP/1.1" 200 12 "-" "curl/8.5" ${seconds}`;

async function run(argv: string[], stdin: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    onSignal: () => () => undefined,
    stdin: Readable.from([Buffer.from(stdin)]),
  });
  return { code, out: out.join(''), err: err.join('') };
}

describe('sluice replay --duration-unit', () => {
  it('reads Apache %T as whole seconds with --duration-unit s (microseconds, %D, without it)', async () => {
    // Two seconds from :00 hold the one slot until :02: the request at :01 is limited.
    const log = [apache('00', 2), apache('01', 2)].join('\n');
    const s = JSON.parse(
      (await run(['replay', '--config', CONFIG, '--json', '--duration-unit', 's', '-'], log)).out,
    );
    expect(s.totals).toMatchObject({ requests: 2, allowed: 1, limited: 1 });
    expect(s.capacity.concurrency).toEqual({ replayed: true, held: 1, withoutDuration: 0, endedEarly: 0 });
    // Read as %D, 2 is two microseconds: the slot is back long before :01.
    const us = JSON.parse((await run(['replay', '--config', CONFIG, '--json', '-'], log)).out);
    expect(us.totals).toMatchObject({ requests: 2, allowed: 2, limited: 0 });
  });

  it('names the option, the expectation and the value on a bad unit', async () => {
    const r = await run(['replay', '--config', CONFIG, '--duration-unit', 'minutes', '-'], apache('00', 1));
    expect(r.code).toBe(2);
    expect(r.err).toContain(
      '--duration-unit must be s, ms or us (the unit of a whole-number duration), got "minutes"',
    );
  });

  it('lists the option in the help', async () => {
    const r = await run(['replay', '--help'], '');
    expect(r.out).toMatch(/--duration-unit UNIT +the unit of a whole-number duration/);
  });
});
