import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { replayHtml } from '../replay/report-html.js';
import { main } from './main.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/rate-limits.yaml', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sluice-log-commands-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const line = (t: string, ip = '203.0.113.7', path = '/api/risk/simulation/studio/run') =>
  `${ip} - - [03/Dec/2026:06:00:${t} +0000] "POST ${path} HTTP/1.1" 200 12 "-" "curl/8.5"`;
const STUDIO = [...Array.from({ length: 10 }, () => line('00')), line('03'), line('05')].join('\n');

async function run(argv: string[], stdin?: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    onSignal: () => () => undefined,
    ...(stdin === undefined ? {} : { stdin: Readable.from([Buffer.from(stdin)]) }),
  });
  return { code, out: out.join(''), err: err.join('') };
}

describe('sluice replay', () => {
  it('reports a log from standard input on the terminal', async () => {
    const r = await run(['replay', '--config', EXAMPLE, '-'], STUDIO);
    expect(r.code).toBe(0);
    expect(r.out).toContain('stdin: 12 requests, 12 lines, combined');
    expect(r.out).toMatch(/all\s+12\s+10\s+0\s+2\s+16\.67%/);
    expect(r.out).toMatch(
      /ip:203\.0\.113\.7\s+2\s+2026-12-03T06:00:03\.000Z\s+2026-12-03T06:00:05\.000Z\s+3 s/,
    );
    expect(r.out).toContain(
      'Busiest minute: 2026-12-03T06:00:00.000Z, 12 requests (10 admitted, 0 queued, 2 limited)',
    );
  });

  it('reads clients logged with their port, and counts those that are no address (host names)', async () => {
    // Envoy's JSON access log writes the client as address:port under a name replay reads by default.
    const json = ['10.0.0.1:34567', '10.0.0.2:34568', '10.0.0.3:1111', '[2001:db8::1]:443']
      .flatMap((c) =>
        Array.from({ length: 6 }, (_, i) =>
          JSON.stringify({
            start_time: `2026-10-10T13:55:0${i}.000Z`,
            path: '/api/risk/simulation/studio/run',
            downstream_remote_address: c,
          }),
        ),
      )
      .join('\n');
    const j = await run(['replay', '--config', EXAMPLE, '--json', '-'], json);
    expect(j.code).toBe(0);
    const report = JSON.parse(j.out);
    expect(report.totals).toMatchObject({ requests: 24, allowed: 24, limited: 0 });
    expect(report.clientsNotIp).toEqual({ lines: 0 });
    const hosts = [line('00', 'a.example.com'), line('01', 'b.example.com'), line('02', '10.0.0.9')].join(
      '\n',
    );
    const h = await run(['replay', '--config', EXAMPLE, '-'], hosts);
    expect(h.code).toBe(0);
    expect(h.out).toContain(
      '2 requests with a client that is no IP address (such as "a.example.com") shared one key, ip:unknown',
    );
  });

  it('exits 1 after its report when a log was read only in part (a truncated gzip file)', async () => {
    const log = join(dir, 'cut.log.gz');
    const whole = gzipSync(
      Array.from({ length: 400 }, () => line('00', '198.51.100.1', '/api/items')).join('\n'),
    );
    writeFileSync(log, whole.subarray(0, whole.length - 20));
    const r = await run(['replay', '--config', EXAMPLE, log]);
    expect(r.code).toBe(1);
    expect(r.out).toContain('reading stopped early: unexpected end of file');
    expect(r.err).toContain(`sluice replay: ${log} was read only in part: unexpected end of file`);
  });

  it('prints JSON with --json, and the flips with --against', async () => {
    const log = join(dir, 'studio.log');
    writeFileSync(log, STUDIO);
    const strict = join(dir, 'strict.yaml');
    writeFileSync(
      strict,
      (await import('node:fs')).readFileSync(EXAMPLE, 'utf8').replace(/limit: 10\n/, 'limit: 8\n'),
    );
    const r = await run(['replay', '--config', EXAMPLE, '--against', strict, '--json', log]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.totals).toMatchObject({ requests: 12, allowed: 10, limited: 2 });
    expect(j.against.flips).toMatchObject({ toLimited: 2, toAllowed: 0 });
    const text = await run(['replay', '--config', EXAMPLE, '--against', strict, log]);
    expect(text.out).toContain(`Requests that flip: 2 admitted by ${EXAMPLE} are limited by ${strict}`);
  });

  it('names the option, the expectation and the value on bad input', async () => {
    expect(await run(['replay', '-'])).toMatchObject({
      code: 2,
      err: expect.stringMatching(/^sluice replay: --config FILE is required\nUsage: /),
    });
    expect((await run(['replay', '--config', EXAMPLE])).err).toMatch(/no LOG given/);
    expect((await run(['replay', '--config', EXAMPLE, join(dir, 'missing.log')])).err).toMatch(
      /cannot read the log ".*missing\.log": ENOENT/,
    );
    expect((await run(['replay', '--config', EXAMPLE, '--format', 'nginx', '-'], '')).err).toMatch(
      /--format must be one of auto, combined, common, envoy, json, gateway, got "nginx"/,
    );
    expect((await run(['replay', '--config', EXAMPLE, '--againts', 'x', '-'], '')).err).toMatch(
      /unknown option "--againts" \(did you mean "--against"\?\)/,
    );
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'rateLimiting:\n  enabled: maybe\n');
    const r = await run(['replay', '--config', bad, '-'], '');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/bad\.yaml:2:\d+/);
    expect((await run(['replay', '--help'])).out).toMatch(/^Usage: sluice replay --config FILE/);
    const help = (await run(['--help'])).out;
    expect(help).toMatch(/sluice replay --config FILE \[--against OTHER\.yaml\]/);
    expect(help).toMatch(/sluice recommend \[--config FILE\] \[--spare SHARE\]/);
  });

  it('names the build step when the HTML page was not built', () => {
    expect(() => replayHtml({} as never, join(dir, 'no-assets'))).toThrow(
      /--html needs the built report page in .*no-assets, which is missing: run "npm run build"/,
    );
  });
});

describe('sluice recommend', () => {
  it('checks --spare and --top', async () => {
    expect((await run(['recommend', '--spare', '2', '-'], '')).err).toMatch(
      /--spare must be a share of clients from 0 to 0\.5 \(0\.01 is 1%\), got "2"/,
    );
    // A negative value given as the next argument reaches the same check (parseArgs alone calls it ambiguous).
    expect((await run(['recommend', '--top', '-1', '-'], '')).err).toMatch(
      /--top must be an integer from 1 to 1000, got "-1"/,
    );
    expect((await run(['serve', '-p', '-1'], '')).err).toMatch(
      /--port must be an integer from 0 to 65535, got "-1"/,
    );
    expect((await run(['recommend', '--top', '0', '-'], '')).err).toMatch(
      /--top must be an integer from 1 to 1000, got "0"/,
    );
  });

  it('proposes nothing for logs without a request, and exits 1', async () => {
    const r = await run(['recommend', '-'], 'not a log line\n');
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toContain('the logs hold no request to measure');
  });
});
