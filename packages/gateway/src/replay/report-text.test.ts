import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfigText } from '../config/load-config.js';
import { fieldMap } from './json-fields.js';
import { replayReport } from './replay-report.js';
import { runReplay } from './replay-run.js';
import { printable, renderReplayText, unprintable } from './report-text.js';

const CONFIG = `rateLimiting:
  defaultTier: free
  tiers:
    free: { requestsPerMinute: 1, burstLimit: 1 }
`;

describe('the terminal report', () => {
  it('shows control characters and bidirectional overrides of a log as escapes, never raw', async () => {
    const loaded = loadConfigText(CONFIG, 'test.yaml');
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.violations));
    // A JSON log's fields are whatever the logger wrote: an escape sequence (here: set the window title) in a
    // tenant would reach the operator's terminal, and a right-to-left override would reorder what it shows.
    const tenant = 'acme\u001b]0;owned\u0007\u202etxt.exe';
    const line = JSON.stringify({
      time: '2026-12-03T06:00:00Z',
      method: 'GET',
      path: '/x',
      tenant,
      app: 'c',
    });
    const run = await runReplay({
      config: { name: 'test', config: loaded.config },
      format: 'json',
      fields: fieldMap(['app=app']),
      logs: [{ name: 'a.log', open: () => Readable.from([Buffer.from(`${line}\n${line}\n`)]) }],
    });
    const text = renderReplayText(replayReport(run));
    expect(text).toContain('tenant:acme\\x1b]0;owned\\x07\\u202etxt.exe:client:c');
    const raw = [...text].filter((c) => c !== '\n' && unprintable(c.charCodeAt(0)));
    expect(raw).toEqual([]);
  });

  it('leaves printable text as it is and escapes each kind of control character', () => {
    expect(printable('tenant:acme:client:web é 😀')).toBe('tenant:acme:client:web é 😀');
    expect(printable('a\tb\nc\u0000\u007f\u0085\u2066')).toBe('a\\x09b\\x0ac\\x00\\x7f\\x85\\u2066');
  });
  it('calls the counts what --json calls them (allowed, queued, limited), and reads a UTF-16 log', async () => {
    const loaded = loadConfigText(CONFIG, 'test.yaml');
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.violations));
    const line = '192.0.2.1 - - [03/Dec/2026:06:00:00 +0000] "GET /x HTTP/1.1" 200 1 "-" "t"';
    // As PowerShell's `>` writes it: UTF-16LE with a byte order mark.
    const bytes = Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`${line}\r\n${line}\r\n`, 'utf16le'),
    ]);
    const report = replayReport(
      await runReplay({
        config: { name: 'test', config: loaded.config },
        logs: [{ name: 'ps.log', open: () => Readable.from([bytes]) }],
      }),
    );
    expect(report.totals).toMatchObject({ requests: 2, allowed: 1, limited: 1 });
    expect(report.logs[0]).toMatchObject({ encoding: 'UTF-16LE', unknown: 0, format: 'combined' });
    const text = renderReplayText(report);
    expect(text).toContain('ps.log: 2 requests, 2 lines, combined, UTF-16LE, decoded');
    expect(text).toMatch(/ {2}requests {2}allowed {2}queued {2}limited/);
    expect(text).toContain('2 requests (1 allowed, 0 queued, 1 limited)');
    expect(text).not.toMatch(/admitted/);
  });

  it('counts one of a thing in the singular', async () => {
    const loaded = loadConfigText(CONFIG, 'test.yaml');
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.violations));
    const at = (t: string) => `10.0.0.1 - - [03/Dec/2026:${t} +0000] "GET / HTTP/1.1" 200 1 "-" "x"`;
    const log = `${at('06:00:05')}\n${at('06:00:01')}\n{"msg":"listening"}\n`;
    const text = renderReplayText(
      replayReport(
        await runReplay({
          config: { name: 'test', config: loaded.config },
          logs: [{ name: 'one.log', open: () => Readable.from([log]) }],
          format: 'combined',
        }),
      ),
    );
    expect(text).toContain('one.log: 2 requests, 3 lines, combined');
    expect(text).toContain('  1 unknown line skipped (line 3)');
    expect(text).toContain(
      "  1 line earlier than a line before it (written at the request's end, stamped at its start) was put back in time order (reorder window 120 s)",
    );
    expect(text).toContain('Busiest minute: 2026-12-03T06:00:00.000Z, 2 requests');
    const single = renderReplayText(
      replayReport(
        await runReplay({
          config: { name: 'test', config: loaded.config },
          logs: [{ name: 'single.log', open: () => Readable.from([`${at('06:00:00')}\n`]) }],
        }),
      ),
    );
    expect(single).toContain('single.log: 1 request, 1 line, combined');
    const days = renderReplayText(
      replayReport(
        await runReplay({
          config: { name: 'test', config: loaded.config },
          logs: [
            {
              name: 'days.log',
              open: () =>
                Readable.from([
                  `${at('06:00:00')}\n${at('06:00:00').replace('03/Dec/2026', '03/Dec/2036')}\n`,
                ]),
            },
          ],
        }),
      ),
    );
    expect(days).toContain('to 2036-12-03T06:00:00.000Z (3,653.0 days)');
    expect(single).toContain(
      'Busiest minute: 2026-12-03T06:00:00.000Z, 1 request (1 allowed, 0 queued, 0 limited)',
    );
  });
});
