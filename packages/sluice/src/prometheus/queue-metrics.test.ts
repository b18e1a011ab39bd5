import { describe, expect, it } from 'vitest';
import { combineMetrics, NoopMetrics } from '../metrics/index.js';
import { prometheusMetricNames } from './prometheus-metric-names.js';
import { PrometheusMetrics } from './prometheus-metrics.js';

describe('queue metrics', () => {
  it('expose the queue length per policy and the wait time by result', async () => {
    const m = new PrometheusMetrics({ prefix: 'pe' });
    m.setQueueLength('policy-engine', 3);
    m.setQueueLength('policy-engine', 2);
    m.recordQueueWait('policy-engine', 10, 'admitted');
    m.recordQueueWait('policy-engine', 0.5, 'abandoned');
    const text = await m.metrics();
    expect(text).toContain('pe_queue_length{policy="policy-engine"} 2');
    expect(text).toContain('pe_queue_wait_seconds_count{policy="policy-engine",result="admitted"} 1');
    expect(text).toContain('pe_queue_wait_seconds_sum{policy="policy-engine",result="admitted"} 10');
    expect(text).toContain(
      'pe_queue_wait_seconds_bucket{le="10",policy="policy-engine",result="admitted"} 1',
    );
    expect(text).toContain('pe_queue_wait_seconds_count{policy="policy-engine",result="abandoned"} 1');
    expect(prometheusMetricNames('pe')).toMatchObject({
      queueLength: 'pe_queue_length',
      queueWait: 'pe_queue_wait_seconds',
    });
  });

  it('reach every sink of a combination, including sinks that predate queues', () => {
    const seen: string[] = [];
    class Sink extends NoopMetrics {
      override setQueueLength(policy: string, n: number): void {
        seen.push(`${policy}=${n}`);
      }
    }
    const old = { ...new NoopMetrics(), setQueueLength: undefined, recordQueueWait: undefined };
    const all = combineMetrics(old as unknown as NoopMetrics, new Sink());
    all.setQueueLength?.('q', 1);
    all.recordQueueWait?.('q', 1, 'admitted');
    expect(seen).toEqual(['q=1']);
  });
});
