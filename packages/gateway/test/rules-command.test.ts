import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCode } from 'sluice';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
// A missing promtool fails with the install command (apt-get install prometheus), never a skip.
import { promtool } from '../../../test/support/promtool.js';
import { ALERT_RULES_TEMPLATE, renderAlertRules } from '../src/cli/alert-rules.js';
import { HELP_TEXT } from '../src/cli/help-text.js';
import { rulesCommand } from '../src/cli/rules-command.js';

const SHIPPED = fileURLToPath(
  new URL('../../../deploy/prometheus/rules/rate-limiting.yaml', import.meta.url),
);
const PROMTOOL_TESTS = fileURLToPath(
  new URL('../../../deploy/prometheus/rules/rate-limiting.test.yaml', import.meta.url),
);
// Not support.ts's tempDir: that module loads the whole gateway, which this test needs only through main.
const tmp = { dir: mkdtempSync(join(tmpdir(), 'sluice-rules-')) };
afterAll(() => rmSync(tmp.dir, { recursive: true, force: true }));

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t), onSignal: () => () => undefined },
  };
}

function configWith(name: string, metrics: string): string {
  const file = join(tmp.dir, name);
  writeFileSync(
    file,
    `rateLimiting:\n  defaultTier: standard\n  tiers:\n    standard:\n      requestsPerMinute: 300\n      burstLimit: 50\n${metrics}`,
  );
  return file;
}

interface Rule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
const rulesOf = (yaml: string): Rule[] =>
  (parse(yaml) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

describe('sluice rules --config FILE', () => {
  it('prints the shipped alert rules rewritten for the file metric prefix, which promtool accepts', async () => {
    const file = configWith('stellaops.yaml', 'metrics:\n  prefix: stellaops\n');
    const { out, err, io: cliIo } = io();
    const code = rulesCommand(file, cliIo);
    expect(err).toEqual([]);
    expect(code).toBe(0);
    const text = out.join('');
    expect(text).toContain('expr: rate(stellaops_rate_limit_exceeded_total[5m]) > 10');
    expect(text).not.toMatch(/sluice_/);
    expect(rulesOf(text)[0]).toMatchObject({
      alert: 'HighRateLimitExceeded',
      expr: 'rate(stellaops_rate_limit_exceeded_total[5m]) > 10',
      for: '5m',
      labels: { severity: 'warning' },
      annotations: { summary: 'High rate of rate limit exceeded events' },
    });

    const rendered = join(tmp.dir, 'rate-limiting.yaml');
    writeFileSync(rendered, text);
    const check = await promtool(['check', 'rules', rendered]);
    expect(check.output).toContain('SUCCESS: 10 rules found');
    expect(check.code).toBe(0);
    // The shipped promtool unit tests, on series of the new prefix, still pass against the rendered rules.
    writeFileSync(
      join(tmp.dir, 'rate-limiting.test.yaml'),
      readFileSync(PROMTOOL_TESTS, 'utf8').replaceAll('sluice_', 'stellaops_'),
    );
    const test = await promtool(['test', 'rules', join(tmp.dir, 'rate-limiting.test.yaml')]);
    expect(test.output).toContain('SUCCESS');
    expect(test.code).toBe(0);
  });

  it('is wired into the sluice command, with --config or the file as its argument', async () => {
    // Imported here so that only this test depends on every module the CLI loads.
    const { main } = await import('../src/cli/main.js');
    const file = configWith('default.yaml', '');
    const flag = io();
    expect(await main(['rules', '--config', file], flag.io)).toBe(0);
    // Without a metrics section the prefix is the default one, so the output is the shipped file itself.
    expect(flag.out.join('')).toBe(readFileSync(SHIPPED, 'utf8'));
    const positional = io();
    expect(await main(['rules', file], positional.io)).toBe(0);
    expect(positional.out).toEqual(flag.out);
    const none = io();
    expect(await main(['rules'], none.io)).toBe(2);
    expect(none.err.join('')).toContain('rules needs --config FILE');
  });

  it('still prints the rules when metrics are disabled, with a warning on stderr', () => {
    const file = configWith('off.yaml', 'metrics:\n  enabled: false\n  prefix: acme\n');
    const { out, err, io: cliIo } = io();
    expect(rulesCommand(file, cliIo)).toBe(0);
    expect(out.join('')).toContain('rate(acme_rate_limit_exceeded_total[5m]) > 10');
    expect(err.join('')).toContain('metrics.enabled is false');
  });

  it('needs a configuration file and reports an invalid one', () => {
    const none = io();
    expect(rulesCommand(undefined, none.io)).toBe(2);
    expect(none.err.join('')).toContain('rules needs --config FILE');
    const bad = io();
    const file = configWith('bad.yaml', 'metrics:\n  prefix: 9lives\n');
    expect(rulesCommand(file, bad.io)).toBe(1);
    expect(bad.out).toEqual([]);
    expect(bad.err.join('')).toContain('metrics.prefix');
  });

  it('is listed in the help text', () => {
    expect(HELP_TEXT).toContain('sluice rules --config FILE');
    expect(HELP_TEXT).toMatch(/\n {2}rules {2,}Print the Prometheus alert rules/);
  });
});

describe("the alert rules on the gateway's own series", () => {
  it('name only series a gateway registers, for any prefix', async () => {
    const { TappedMetrics } = await import('../src/metrics/tapped-metrics.js');
    const { connectionLimits } = await import('../src/gateway/connection-limits.js');
    const { createLogger } = await import('../src/log/create-logger.js');
    const metrics = new TappedMetrics([], { prefix: 'stellaops' });
    connectionLimits({
      runtime: () => ({ config: { server: { maxConnectionsPerClient: 0 } } }) as never,
      logger: createLogger('silent'),
      metrics: { registry: metrics.registry, prefix: 'stellaops' },
    });
    const registered = new Set((await metrics.registry.getMetricsAsJSON()).map((m) => m.name));
    expect(registered.has('stellaops_connections_refused_total')).toBe(true);
    const rules = rulesOf(renderAlertRules('stellaops'));
    for (const alert of [
      'ProxyConnectionCapReached',
      'ClientConnectionCapReached',
      'UpstreamQueueTimeouts',
      'UpstreamBodiesRefused',
    ]) {
      const rule = rules.find((r) => r.alert === alert);
      const names = rule?.expr.match(/stellaops_[a-z_]+/g) ?? [];
      expect(names.length, alert).toBeGreaterThan(0);
      for (const n of names) expect(registered.has(n), `${alert}: ${n}`).toBe(true);
    }
  });
});

describe('the alert rules template', () => {
  it('renders the shipped deploy/prometheus/rules/rate-limiting.yaml byte for byte for the default prefix', () => {
    expect(renderAlertRules('sluice')).toBe(readFileSync(SHIPPED, 'utf8'));
    expect(renderAlertRules()).toBe(renderAlertRules('sluice'));
  });

  it('holds the HighRateLimitExceeded rule verbatim and leaves no placeholder behind', () => {
    expect(ALERT_RULES_TEMPLATE).toContain('{prefix}');
    const text = renderAlertRules('stellaops');
    expect(text).not.toContain('{prefix}');
    expect(text).toContain(
      [
        '      - alert: HighRateLimitExceeded',
        '        expr: rate(stellaops_rate_limit_exceeded_total[5m]) > 10',
        '        for: 5m',
        '        labels:',
        '          severity: warning',
        '        annotations:',
        '          summary: "High rate of rate limit exceeded events"',
      ].join('\n'),
    );
  });

  it('rejects a prefix that is not a metric name start', () => {
    expect(() => renderAlertRules('9lives')).toThrowError(
      expect.objectContaining({ code: ErrorCode.InvalidOption }),
    );
    expect(() => renderAlertRules('a-b')).toThrowError(/prefix/);
  });
});
