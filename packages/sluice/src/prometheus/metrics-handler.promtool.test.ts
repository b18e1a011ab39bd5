import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { promtool } from '../../../../test/support/promtool.js';
import { Limiter, ManualClock } from '../core/index.js';
import { MemoryStore } from '../memory/index.js';
import { decideWithMetrics } from '../metrics/index.js';
import { metricsHandler } from './metrics-handler.js';
import { PrometheusMetrics } from './prometheus-metrics.js';

// Apart from prometheus-metrics.test.ts because it starts promtool: the rest of the sink's tests stay unit tests.
describe('metricsHandler', () => {
  it('serves the registry over node:http and passes promtool check metrics', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, sweepIntervalMs: 0, maxTrackedKeys: 64 });
    const limiter = new Limiter({ policies: [{ name: 'rl.write', quota: 60, window: 60, burst: 3 }], store });
    const metrics = new PrometheusMetrics();
    metrics.observeStore(store);
    for (let i = 0; i < 6; i++) {
      decideWithMetrics(limiter, [{ policy: 'rl.write', key: 'user:1' }], 1, metrics, {
        tier: 'free',
        store: 'memory',
      });
    }
    metrics.recordExempt({ reason: 'endpoint', rule: '/health' });
    metrics.recordFailover('memory', 'closed', false);
    metrics.setQuotaUsage(new Map([['acme', 0.4]]));
    metrics.recordQuotaAlert(1);
    metrics.recordWebhook('delivered');
    metrics.recordStoreError('memory');
    metrics.recordDenyCacheHit('rl.write');
    const server = http.createServer(metricsHandler(metrics.registry));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const res = await fetch(`${base}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(metrics.registry.contentType);
      const text = await res.text();
      expect(text).toContain('sluice_rate_limit_exceeded_total{policy="rl.write",tier="free",rule=""} 3');
      const post = await fetch(`${base}/metrics`, { method: 'POST' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD');
      const head = await fetch(`${base}/metrics`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(await promtool(['check', 'metrics'], text)).toEqual({ code: 0, output: '' });
    } finally {
      server.close();
    }
  });
});
