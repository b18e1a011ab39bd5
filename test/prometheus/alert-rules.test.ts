import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PrometheusMetrics } from 'sluice/prometheus';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { promtool } from '../support/promtool.js';

const RULES = resolve('deploy/prometheus/rules/rate-limiting.yaml');
const TESTS = resolve('deploy/prometheus/rules/rate-limiting.test.yaml');

describe('deploy/prometheus/rules/rate-limiting.yaml', () => {
  it('passes promtool check rules and its promtool unit tests', async () => {
    const check = await promtool(['check', 'rules', RULES]);
    expect(check.output).toContain('SUCCESS: 10 rules found');
    expect(check.code).toBe(0);
    const test = await promtool(['test', 'rules', TESTS]);
    expect(test.output).toContain('SUCCESS');
    expect(test.code).toBe(0);
  });

  it('has unit tests that fail when a rule changes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-rules-'));
    try {
      const rules = await readFile(RULES, 'utf8');
      await writeFile(join(dir, 'rate-limiting.yaml'), rules.replace('[5m]) > 10', '[5m]) > 20'));
      await copyFile(TESTS, join(dir, 'rate-limiting.test.yaml'));
      const test = await promtool(['test', 'rules', join(dir, 'rate-limiting.test.yaml')]);
      expect(test.code).not.toBe(0);
      expect(test.output).toContain('HighRateLimitExceeded');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('names only metrics the Prometheus sink exports, with the default prefix', async () => {
    const doc = parse(await readFile(RULES, 'utf8')) as {
      groups: { rules: { alert: string; expr: string }[] }[];
    };
    const rules = doc.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toEqual([
      'HighRateLimitExceeded',
      'TenantNearQuota',
      'TenantQuotaExhausted',
      'RateLimitStoreFailureModeActive',
      'ProxyConnectionCapReached',
      'ClientConnectionCapReached',
      'UpstreamQueueTimeouts',
      'UpstreamBodiesRefused',
      'RequestsShed',
      'CriticalRequestsShed',
    ]);
    // The library sink's names, and the gateway's own series (its proxy listener and upstream pool).
    const exported = new Set([
      ...Object.values(new PrometheusMetrics().names),
      'sluice_connections_refused_total',
      'sluice_upstream_queue_timeouts_total',
      'sluice_upstream_bodies_refused_total',
      'sluice_shed_total',
    ]);
    for (const r of rules) {
      const names = r.expr.match(/sluice_[a-z_]+/g) ?? [];
      expect(names.length).toBeGreaterThan(0);
      for (const n of names) expect(exported.has(n)).toBe(true);
    }
    expect(rules[0].expr).toBe('rate(sluice_rate_limit_exceeded_total[5m]) > 10');
  });
});
