import { describe, expect, it } from 'vitest';
import { PrometheusMetrics } from './prometheus-metrics.js';
import { PrometheusSettleMetrics } from './settle-metrics.js';

describe('PrometheusSettleMetrics', () => {
  it('counts units charged per policy and unit, and fallbacks per rule, with bounded labels', async () => {
    const metrics = new PrometheusMetrics({ prefix: 'acme' });
    const s = new PrometheusSettleMetrics({ registry: metrics.registry, prefix: 'acme', maxLabelValues: 2 });
    s.recordUnits('tokens', 'tokens', 120);
    s.recordUnits('tokens', 'tokens', 30);
    s.recordUnits('downloads', 'bytes', 4096);
    s.recordUnits('third', 'requests', 1);
    s.recordUnits('tokens', 'tokens', 0);
    s.recordSettleFallback('chat', 'json_missing');
    const text = await metrics.registry.metrics();
    expect(text).toContain('acme_units_total{policy="tokens",unit="tokens"} 150');
    expect(text).toContain('acme_units_total{policy="downloads",unit="bytes"} 4096');
    expect(text).toContain('acme_units_total{policy="other",unit="requests"} 1');
    expect(text).toContain('acme_settle_fallbacks_total{rule="other",reason="json_missing"} 1');
  });

  it('refuses a prefix that cannot start a metric name', () => {
    const metrics = new PrometheusMetrics();
    expect(() => new PrometheusSettleMetrics({ registry: metrics.registry, prefix: '9x' })).toThrow(
      /prefix must be/,
    );
  });
});
