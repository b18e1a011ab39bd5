import { createReadStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateLog } from '../../../../bench/replay/generate-log.js';
import { main } from '../cli/main.js';
import { renderRecommendation } from '../cli/recommend-command.js';
import { loadConfigText } from '../config/load-config.js';
import { quantile } from './rate-distribution.js';
import { recommend } from './recommend.js';
import { replayReport } from './replay-report.js';
import { runReplay } from './replay-run.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/rate-limits.yaml', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sluice-recommend-'));
const LOG = join(dir, 'zipf.log');
const logs = [{ name: LOG, open: () => createReadStream(LOG) }];

beforeAll(() => generateLog(LOG, 40_000, 2_000, 900, 5));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configOf(yaml: string) {
  const r = loadConfigText(yaml, join(dir, 'proposed.yaml'), { env: {} });
  if (!r.ok) throw new Error(JSON.stringify(r.violations));
  return r.config;
}

/** Distinct limited keys over distinct keys, replaying a proposed file. */
async function limitedShare(yaml: string): Promise<number> {
  const r = replayReport(await runReplay({ config: { name: 'proposed', config: configOf(yaml) }, logs }));
  const clients = new Set<string>();
  await runReplay({
    config: { name: 'proposed', config: configOf(yaml) },
    logs,
    onDecision: (_r, d) => {
      if (!(d instanceof Promise)) clients.add(d.key ?? '');
    },
  });
  return r.limitedKeyCount / clients.size;
}

describe('sluice recommend', () => {
  it('measures nearest-rank percentiles', () => {
    const a = Float64Array.from({ length: 100 }, (_, i) => i + 1);
    expect([quantile(a, 0.5), quantile(a, 0.9), quantile(a, 0.99), quantile(a, 1)]).toEqual([
      50, 90, 99, 100,
    ]);
    expect(quantile(new Float64Array(0), 0.5)).toBe(0);
  });

  it('proposes path-template rules and a tier whose replay limits at most the share asked', async () => {
    for (const spare of [0.01, 0.05]) {
      const r = await recommend({ logs, spare, top: 5 });
      expect(r.confirmation.withinSpare).toBe(true);
      expect(r.confirmation.share).toBeLessThanOrEqual(spare);
      // An independent replay of the printed file agrees.
      expect(await limitedShare(r.yaml)).toBeLessThanOrEqual(spare);
      expect(r.yaml).toMatch(/pattern: \/api\/items\/:id/);
      const tier = r.groups.find((g) => g.group === 'tier:standard')!;
      // Never below the p99 client's busiest minute.
      expect(r.proposals.find((p) => p.name === 'standard')!.perMinute).toBeGreaterThanOrEqual(
        tier.windows[1].p99,
      );
    }
  });

  it('proposes for a template the rule that matches what it measured, not the paths below it too', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 600; i++) {
      const t = `03/Dec/2026:06:${String(Math.floor(i / 20)).padStart(2, '0')}:00 +0000`;
      const path = i % 2 === 0 ? `/api/orders/${i}` : `/api/orders/${i}/items`;
      lines.push(`10.0.${i % 7}.${i % 50} - - [${t}] "GET ${path} HTTP/1.1" 200 1 "-" "t"`);
    }
    const file = join(dir, 'orders.log');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const orders = [{ name: file, open: () => createReadStream(file) }];
    const r = await recommend({ logs: orders, spare: 0.01, top: 5 });
    const measured = r.groups.find((g) => g.group === 'rule:/api/orders/:id');
    expect(measured?.requests).toBe(300);
    // Replayed, the proposed rule checks the same requests the table counted.
    const replayed = replayReport(
      await runReplay({ config: { name: 'p', config: configOf(r.yaml) }, logs: orders }),
    );
    expect(replayed.policies.find((p) => p.policy === '/api/orders/:id')?.requests).toBe(300);
  });

  it('keeps the configuration file, comments and all, with new numbers that sluice validate accepts', async () => {
    const text = readFileSync(EXAMPLE, 'utf8');
    const r = await recommend({
      logs,
      spare: 0.01,
      top: 10,
      config: { name: EXAMPLE, config: configOf(text), text },
    });
    expect(r.yaml.startsWith('# gateway/rate-limits.yaml')).toBe(true);
    expect(r.confirmation.withinSpare).toBe(true);
    expect(r.groups.map((g) => g.group)).toContain('rule:/api/risk/simulation/studio/*');
    const file = join(dir, 'proposed.yaml');
    writeFileSync(file, r.yaml);
    const out: string[] = [];
    const code = await main(['validate', file], {
      out: (t) => out.push(t),
      err: (t) => out.push(t),
      onSignal: () => () => undefined,
    });
    expect(out.join('')).toMatch(/valid \(3 tiers, 3 endpoint rules/);
    expect(code).toBe(0);
  });

  it('prints the distributions, the file and the confirming replay', async () => {
    const out: string[] = [];
    const code = await main(['recommend', '--top', '3', LOG], {
      out: (t) => out.push(t),
      err: (t) => out.push(t),
      onSignal: () => () => undefined,
    });
    const text = out.join('');
    expect(code).toBe(0);
    expect(text).toMatch(/40,000 requests from 1,9\d\d clients/);
    expect(text).toMatch(/tier:standard\s+40,000\s+1,9\d\d\s+[\d,]+\s+\d+ \/ \d+ \/ \d+ \/ \d+/);
    expect(text).toMatch(/rateLimiting:\n {2}enabled: true\n {2}defaultTier: standard/);
    expect(text).toMatch(
      /Replay of the logs under the proposed limits: .* clients \(\d+\.\d\d%\) limited at least once, within --spare 0\.01/,
    );
  });
  it('is not pulled down by 20,000 clients with one request: 100 clients at 30 a minute still get about 30', async () => {
    // An hour: 100 clients each sending one request every 2 s (30 a minute), and 20,000 addresses sending one
    // request each (10% of the requests), as a flood of scanners would.
    const t0 = Date.UTC(2026, 11, 3, 9, 0, 0);
    const at = (ms: number) => {
      const d = new Date(ms);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${p(d.getUTCDate())}/Dec/2026:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
    };
    const lines: [number, string][] = [];
    for (let c = 0; c < 100; c++)
      for (let k = 0; k < 1800; k++)
        lines.push([t0 + k * 2000 + (c % 2) * 1000, `10.1.${c >> 8}.${c & 255}`]);
    for (let i = 0; i < 20_000; i++)
      lines.push([t0 + Math.floor((i * 3_600_000) / 20_000), `172.16.${i >> 8}.${i & 255}`]);
    lines.sort((a, b) => a[0] - b[0]);
    const file = join(dir, 'poisoned.log');
    writeFileSync(
      file,
      `${lines.map(([t, ip]) => `${ip} - - [${at(t)}] "GET /api/items HTTP/1.1" 200 1 "-" "t"`).join('\n')}\n`,
    );
    const r = await recommend({
      logs: [{ name: file, open: () => createReadStream(file) }],
      spare: 0.01,
      top: 5,
    });
    const standard = r.proposals.find((p) => p.name === 'standard')!;
    expect(standard.perMinute).toBeGreaterThanOrEqual(30);
    expect(standard.perMinute).toBeLessThanOrEqual(36);
    expect(r.proposals.find((p) => p.name === '/api/items')?.perMinute).toBeGreaterThanOrEqual(30);
    expect(r.clients).toBe(20_100);
    expect(r.clientsOneRequest).toBe(20_000);
    // Both shares are reported, and both are within --spare.
    expect(r.confirmation.requestShare).toBeLessThanOrEqual(0.01);
    expect(r.confirmation.share).toBeLessThanOrEqual(0.01);
    expect(r.confirmation.withinSpare).toBe(true);
    const text = renderRecommendation(r);
    expect(text).toContain(
      '200,000 requests from 20,100 clients (20,000 sent one request: counted, not in the peaks)',
    );
    expect(text).toMatch(
      /requests \(\d+\.\d\d%\) limited; \d+ of 20,100 clients \(\d+\.\d\d%\) limited at least once, within --spare 0\.01 for both/,
    );
  });

  it('measures a log that starts over at its first late line as one read once', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 900; i++) {
      // The last lines come 40 s late, after 800 in order: the measuring replay starts over with the whole window.
      const s = i < 800 ? i : i - 40;
      const t = `03/Dec/2026:06:${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')} +0000`;
      lines.push(`10.0.0.${i % 5} - - [${t}] "GET /api/orders/${i % 9} HTTP/1.1" 200 1 "-" "t"`);
    }
    const file = join(dir, 'late.log');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const [again, once] = await Promise.all(
      [false, true].map((readOnce) =>
        recommend({
          logs: [{ name: file, open: () => createReadStream(file), readOnce }],
          spare: 0.01,
          top: 5,
        }),
      ),
    );
    expect(again.groups).toEqual(once.groups);
    expect(again.yaml).toBe(once.yaml);
    expect(again.requests).toBe(900);
    expect(again.groups.find((g) => g.group === 'tier:standard')?.requests).toBe(900);
  });

  it('proposes no rule where no client sent more than one request: there is no rate to measure', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 600; i++) {
      const t = `03/Dec/2026:06:${String(Math.floor(i / 20)).padStart(2, '0')}:${String(i % 20).padStart(2, '0')} +0000`;
      lines.push(
        i % 2 === 0
          ? `10.0.0.${i % 5} - - [${t}] "GET /api/items HTTP/1.1" 200 1 "-" "t"`
          : `172.16.${i >> 8}.${i & 255} - - [${t}] "GET /api/once/${i} HTTP/1.1" 200 1 "-" "t"`,
      );
    }
    const file = join(dir, 'once.log');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const r = await recommend({
      logs: [{ name: file, open: () => createReadStream(file) }],
      spare: 0.01,
      top: 10,
    });
    expect(r.proposals.map((p) => p.name).sort()).toEqual(['/api/items', 'standard']);
    expect(r.clients).toBe(305);
  });

  it('proposes no endpoint rule for static files, and says how many requests they were', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 1200; i++) {
      const t = `03/Dec/2026:06:${String(Math.floor(i / 20)).padStart(2, '0')}:${String(i % 20).padStart(2, '0')} +0000`;
      const path = ['/static/app.js', '/img/Logo.PNG', '/fonts/a.woff2', '/api/orders'][i % 4];
      lines.push(`10.0.${i % 7}.${i % 50} - - [${t}] "GET ${path} HTTP/1.1" 200 1 "-" "t"`);
    }
    const file = join(dir, 'assets.log');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const r = await recommend({
      logs: [{ name: file, open: () => createReadStream(file) }],
      spare: 0.01,
      top: 10,
    });
    expect(r.proposals.map((p) => p.name).sort()).toEqual(['/api/orders', 'standard']);
    expect(r.yaml).not.toMatch(/static|Logo|woff2/);
    expect(r.staticFiles).toEqual({ requests: 900, paths: 3 });
    expect(renderRecommendation(r)).toContain(
      '900 requests for static files (3 paths such as .css, .js, images and fonts) were measured in their tier but given no endpoint rule: a page loads them in a burst',
    );
  });

  describe('a log shorter than a window', () => {
    // The tester's case: ten minutes of traffic, then the same traffic for an hour.
    const SHORT = join(dir, 'ten-minutes.log');
    const HOUR = join(dir, 'hour.log');
    const TINY = join(dir, 'thirty-seconds.log');
    const open = (file: string) => [{ name: file, open: () => createReadStream(file) }];
    beforeAll(async () => {
      await generateLog(SHORT, 4_000, 50, 600, 9);
      await generateLog(HOUR, 24_000, 50, 3_600, 9);
      await generateLog(TINY, 300, 20, 30, 9);
    });

    it('proposes no requestsPerHour from ten minutes, says so, and the same traffic for an hour meets no hour limit', async () => {
      const r = await recommend({ logs: open(SHORT), spare: 0.01, top: 3 });
      expect(r.span).toEqual({
        first: '2026-12-01T09:00:00.000Z',
        last: '2026-12-01T09:09:59.000Z',
        seconds: 600,
      });
      expect(r.yaml).not.toMatch(/requestsPerHour/);
      expect(r.proposals.find((p) => p.name === 'standard')?.perHour).toBe(0);
      expect(r.warnings.join('\n')).toMatch(
        /the logs span 10 min \(2026-12-01T09:00:00.000Z to 2026-12-01T09:09:59.000Z\), less than an hour: no requestsPerHour is proposed/,
      );
      const hour = replayReport(
        await runReplay({ config: { name: 'p', config: configOf(r.yaml) }, logs: open(HOUR) }),
      );
      expect(hour.policies.map((p) => p.policy)).not.toContain('standard.hour');
    });

    it("keeps the file's requestsPerHour as written when the logs span less than an hour", async () => {
      const text = readFileSync(EXAMPLE, 'utf8');
      const r = await recommend({
        logs: open(SHORT),
        spare: 0.01,
        top: 10,
        config: { name: EXAMPLE, config: configOf(text), text },
      });
      expect(r.yaml).toMatch(/requestsPerHour: 1000\n/);
      expect(r.yaml).toMatch(/requestsPerHour: 10000\n/);
      expect(r.proposals.find((p) => p.name === 'standard')).toMatchObject({
        perHour: 10_000,
        hourKept: true,
      });
      expect(r.warnings.join('\n')).toMatch(/requestsPerHour of standard is kept as the file has it/);
    });

    it('extrapolates per-minute limits from a log of 30 s, and says so', async () => {
      const r = await recommend({ logs: open(TINY), spare: 0.01, top: 3 });
      expect(r.span?.seconds).toBe(30);
      const tier = r.groups.find((g) => g.group === 'tier:standard')!;
      const standard = r.proposals.find((p) => p.name === 'standard')!;
      // The busiest 30 s of the p99 client, at that pace for a minute.
      expect(standard.perMinute).toBeGreaterThanOrEqual(2 * tier.windows[1].p99);
      expect(standard.extrapolated).toBe(true);
      expect(r.warnings.join('\n')).toMatch(
        /the logs span 30 s .*, less than a minute: the per-minute limits of standard, .* are extrapolated from each client's pace over 30 s/,
      );
    });

    it('prints the warning in the text report and in --json, and none for a log of an hour', async () => {
      const run = async (args: string[]) => {
        const out: string[] = [];
        const code = await main(['recommend', ...args], {
          out: (t) => out.push(t),
          err: (t) => out.push(t),
          onSignal: () => () => undefined,
        });
        return { code, text: out.join('') };
      };
      const text = await run(['--top', '3', SHORT]);
      expect(text.code).toBe(0);
      expect(text.text).toMatch(
        /\nWarning: the logs span 10 min .*, less than an hour: no requestsPerHour is proposed/,
      );
      const json = await run(['--json', '--top', '3', SHORT]);
      const parsed = JSON.parse(json.text) as { warnings: string[]; span: { seconds: number } };
      expect(parsed.span.seconds).toBe(600);
      expect(parsed.warnings[0]).toMatch(/^the logs span 10 min/);
      const hour = await run(['--json', '--top', '3', HOUR]);
      const whole = JSON.parse(hour.text) as { warnings: string[]; yaml: string };
      expect(whole.warnings).toEqual([]);
      expect(whole.yaml).toMatch(/requestsPerHour: \d+/);
    });
  });
});
