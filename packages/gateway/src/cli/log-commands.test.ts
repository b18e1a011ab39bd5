import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

async function run(
  argv: string[],
  stdin?: string | Buffer | Readable,
  env?: Readonly<Record<string, string | undefined>>,
) {
  const out: string[] = [];
  const err: string[] = [];
  const input =
    stdin === undefined || stdin instanceof Readable ? stdin : Readable.from([Buffer.from(stdin)]);
  const code = await main(argv, {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    onSignal: () => () => undefined,
    ...(input === undefined ? {} : { stdin: input }),
    ...(env === undefined ? {} : { env }),
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
      'Busiest minute: 2026-12-03T06:00:00.000Z, 12 requests (10 allowed, 0 queued, 2 limited)',
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
    writeFileSync(strict, readFileSync(EXAMPLE, 'utf8').replace(/limit: 10\n/, 'limit: 8\n'));
    const r = await run(['replay', '--config', EXAMPLE, '--against', strict, '--json', log]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.totals).toMatchObject({ requests: 12, allowed: 10, limited: 2 });
    expect(j.against.flips).toMatchObject({ toLimited: 2, toAllowed: 0 });
    const text = await run(['replay', '--config', EXAMPLE, '--against', strict, log]);
    expect(text.out).toContain(`Requests that flip: 2 allowed by ${EXAMPLE} are limited by ${strict}`);
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

/** A log of the example's studio endpoint in Envoy's default format, X-Forwarded-For as an edge Envoy writes it. */
const envoyLine = (s: string, xff = '-') =>
  `[2026-12-03T06:00:${s}.000Z] "POST /api/risk/simulation/studio/run HTTP/1.1" 200 - 10 20 3 2 "${xff}" "curl/8" "id" "host" "tcp://10.0.2.1:80"`;

describe('sluice replay: what the report says about its input', () => {
  it('reads a numeric time beyond a date as an unknown line, never a crash', async () => {
    const json = [
      JSON.stringify({ time: 1e308, path: '/api/items' }),
      JSON.stringify({ time: 9e15, path: '/api/items' }),
      JSON.stringify({ time: -1e308, path: '/api/items' }),
      JSON.stringify({ time: '2026-12-03T06:00:00Z', path: '/api/items', client: '10.0.0.1' }),
      JSON.stringify({ service: 'sluice', msg: 'request', time: 1e308, method: 'GET', url: '/api/items' }),
    ].join('\n');
    const r = await run(['replay', '--config', EXAMPLE, '-'], json);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('stdin: 1 request, 5 lines, json');
    expect(r.out).toContain('4 unknown lines skipped (line 1, 2, 3, 5)');
  });

  it('says no line was read as a request, names the format tried, and exits 1', async () => {
    const r = await run(['replay', '--config', EXAMPLE, '--format', 'json', '-'], STUDIO);
    expect(r.code).toBe(1);
    expect(r.err).toContain('sluice replay: no line of stdin was read as a request in the format json');
    expect(r.err).toMatch(/--format/);
    expect(r.err).toMatch(/--field NAME=PATH/);
    const none = await run(['replay', '--config', EXAMPLE, '-'], 'not a log line\nnor this one\n');
    expect(none.code).toBe(1);
    expect(none.err).toMatch(
      /no line of stdin was read as a request: no format \(combined, common, envoy, json, gateway\) reads/,
    );
  });

  it('chooses the format from the first line a format reads, and says which', async () => {
    // A JSON log cut in the middle of its first line (tail -c, a rotated file).
    const cut = `me":"2026-12-03T06:00:00Z","path":"/a"}\n${Array.from({ length: 3 }, (_, i) =>
      JSON.stringify({ time: `2026-12-03T06:00:0${i}Z`, path: '/api/items', client: '10.0.0.1' }),
    ).join('\n')}`;
    const r = await run(['replay', '--config', EXAMPLE, '-'], cut);
    expect(r.code).toBe(0);
    expect(r.out).toContain('stdin: 3 requests, 4 lines, json');
    expect(r.out).toContain('format detected from line 2, the first line a format reads');
    const j = JSON.parse((await run(['replay', '--config', EXAMPLE, '--json', '-'], cut)).out);
    expect(j.logs[0]).toMatchObject({ format: 'json', formatLine: 2, unknown: 1, unknownLines: [1] });
  });

  it('labels a common log common, and a combined one combined', async () => {
    const common = STUDIO.replaceAll(' "-" "curl/8.5"', '');
    expect((await run(['replay', '--config', EXAMPLE, '-'], common)).out).toContain(
      'stdin: 12 requests, 12 lines, common',
    );
    expect((await run(['replay', '--config', EXAMPLE, '--format', 'combined', '-'], common)).out).toContain(
      'stdin: 12 requests, 12 lines, common',
    );
    expect((await run(['replay', '--config', EXAMPLE, '--format', 'common', '-'], STUDIO)).out).toContain(
      'stdin: 12 requests, 12 lines, combined',
    );
  });

  it('takes --reorder-window, and names the option, the expectation and the value on a bad one', async () => {
    // 06:00:10 is decided once 06:00:13 is read (2 s later): 06:00:05 comes too late to go before it.
    const late = [line('10'), line('13'), line('05')].join('\n');
    const j = JSON.parse(
      (await run(['replay', '--config', EXAMPLE, '--json', '--reorder-window', '2s', '-'], late)).out,
    );
    expect(j.outOfOrder).toEqual({ lines: 1, maxSeconds: 8, windowSeconds: 2, reordered: 0, early: 0 });
    const d = JSON.parse((await run(['replay', '--config', EXAMPLE, '--json', '-'], late)).out);
    expect(d.outOfOrder).toEqual({ lines: 0, maxSeconds: 0, windowSeconds: 120, reordered: 1, early: 0 });
    for (const cmd of [['replay', '--config', EXAMPLE], ['recommend']])
      for (const bad of ['soon', '2h', '-1s', '']) {
        const r = await run([...cmd, '--reorder-window', bad, '-'], late);
        expect(r.code).toBe(2);
        expect(r.err).toContain(
          `--reorder-window must be a duration from 0 to 1h (such as 60s or 2m; default 120s, 0 decides lines as they come), got ${JSON.stringify(bad)}`,
        );
      }
  });

  it('checks the --html file before reading the logs', async () => {
    const bad = join(dir, 'no-such-dir', 'x.html');
    const r = await run(['replay', '--config', EXAMPLE, '--html', bad, '-'], STUDIO);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain(
      `sluice replay: --html must name a file in a writable directory, got ${JSON.stringify(bad)}`,
    );
    const isDir = await run(['replay', '--config', EXAMPLE, '--html', dir, '-'], STUDIO);
    expect(isDir.code).toBe(2);
    expect(isDir.err).toMatch(/--html .* is a directory/);
  });

  it('says that the penalty section is not replayed', async () => {
    const cfg = join(dir, 'penalty.yaml');
    writeFileSync(
      cfg,
      `${readFileSync(EXAMPLE, 'utf8')}\npenalty:\n  after: 3\n  within: 60s\n  block: 10m\n`,
    );
    const r = await run(['replay', '--config', cfg, '-'], STUDIO);
    expect(r.code).toBe(0);
    expect(r.out).toContain(
      'penalty: not replayed (a key limited 3 times within 60 s is blocked for 600 s, doubling up to 14400 s): the gateway refuses more than this replay shows',
    );
    const j = JSON.parse((await run(['replay', '--config', cfg, '--json', '-'], STUDIO)).out);
    expect(j.penalty).toEqual({
      replayed: false,
      after: 3,
      withinSeconds: 60,
      blockSeconds: 600,
      maxBlockSeconds: 14400,
      status: 429,
    });
    const plain = JSON.parse((await run(['replay', '--config', EXAMPLE, '--json', '-'], STUDIO)).out);
    expect(plain.penalty).toBeUndefined();
  });

  it('warns when lines carry no client (an edge Envoy logs X-Forwarded-For as "-")', async () => {
    const log = ['00', '01', '02']
      .map((s) => envoyLine(s))
      .concat(envoyLine('03', '10.0.0.1'))
      .join('\n');
    const r = await run(['replay', '--config', EXAMPLE, '-'], log);
    expect(r.code).toBe(0);
    expect(r.out).toContain(
      '3 of 4 requests (75.00%) had no client address: they were all decided as one client, ip:unknown',
    );
    expect(r.out).toContain('%DOWNSTREAM_REMOTE_ADDRESS%');
    const j = JSON.parse((await run(['replay', '--config', EXAMPLE, '--json', '-'], log)).out);
    expect(j.clientsMissing).toEqual({ lines: 3 });
    const fine = JSON.parse((await run(['replay', '--config', EXAMPLE, '--json', '-'], STUDIO)).out);
    expect(fine.clientsMissing).toEqual({ lines: 0 });
  });

  it('prints a short help with --help', async () => {
    for (const cmd of ['replay', 'recommend']) {
      const r = await run([cmd, '--help']);
      expect(r.code).toBe(0);
      expect(r.out).toMatch(new RegExp(`^Usage: sluice ${cmd} `));
      expect(r.out).toMatch(/\n {2}--format FORMAT {2,}\S/);
      expect(r.out).toMatch(/\nExample:\n {2}sluice /);
    }
    expect((await run(['recommend', '--help'])).out).toMatch(/\n {2}--out FILE {2,}\S/);
    expect((await run(['replay', '--help'])).out).toMatch(/\n {2}--html FILE {2,}\S/);
  });
});

describe('sluice recommend: fixes', () => {
  const TOKEN = 'a-token-of-at-least-thirty-two-characters-x';
  const withToken = () => {
    const cfg = join(dir, 'token.yaml');
    writeFileSync(cfg, `${readFileSync(EXAMPLE, 'utf8')}\nadmin:\n  port: 0\n  token: \${ADMIN_TOKEN}\n`);
    return cfg;
  };

  it('substitutes $VAR references in --config from the environment it was given', async () => {
    const r = await run(['recommend', '--config', withToken(), '-'], STUDIO, { ADMIN_TOKEN: TOKEN });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain(`token: \${ADMIN_TOKEN}`);
    expect(r.out).not.toContain(TOKEN);
  });

  it('answers a failure with a message, never a stack trace', async () => {
    const r = await run(['recommend', '--config', withToken(), '-'], STUDIO, {});
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /^sluice recommend: invalid configuration [\s\S]*environment variable ADMIN_TOKEN is not set/,
    );
    const broken = new Readable({
      read() {
        this.destroy(new Error('the pipe broke'));
      },
    });
    const b = await run(['recommend', '-'], broken);
    expect(b.code).toBe(1);
    expect(b.err).toBe('sluice recommend: cannot read stdin: the pipe broke\n');
  });

  it('says a log was read only in part, and exits 1 after its report', async () => {
    const whole = gzipSync(
      Array.from({ length: 400 }, (_, i) =>
        line(String(i % 60).padStart(2, '0'), `198.51.100.${i % 7}`, '/api/items'),
      ).join('\n'),
    );
    const r = await run(['recommend', '-'], whole.subarray(0, whole.length - 20));
    expect(r.code).toBe(1);
    expect(r.out).toContain('stdin: ');
    expect(r.out).toContain('reading stopped early: unexpected end of file');
    expect(r.out).toContain('# Proposed limits');
    expect(r.err).toContain('sluice recommend: stdin was read only in part: unexpected end of file');
  });

  it('writes only the proposed file with --out, which validate and replay take', async () => {
    const out = join(dir, 'proposed.yaml');
    const r = await run(['recommend', '--out', out, '-'], STUDIO);
    expect(r.code).toBe(0);
    expect(r.out).toContain('Per-client peak requests');
    expect(r.out).toContain(
      `# Proposed limits: at most 1.00% of clients and of requests limited, never the p99 client: written to ${out}`,
    );
    expect(r.out).toContain('Replay of the logs under the proposed limits');
    expect(r.out).not.toContain('rateLimiting:');
    const yaml = readFileSync(out, 'utf8');
    expect(yaml).toMatch(/^rateLimiting:/);
    expect(yaml).not.toContain('Replay of the logs');
    expect((await run(['validate', out])).code).toBe(0);
    expect((await run(['replay', '--config', out, '-'], STUDIO)).code).toBe(0);
    const bad = await run(['recommend', '--out', join(dir, 'nope', 'x.yaml'), '-'], STUDIO);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--out must name a file in a writable directory/);
    expect(existsSync(join(dir, 'nope'))).toBe(false);
  });
});
