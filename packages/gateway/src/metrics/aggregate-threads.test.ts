import { PrometheusMetrics } from 'sluice/prometheus';
import { describe, expect, it } from 'vitest';
import { aggregateThreadMetrics } from './aggregate-threads.js';

/** The value of the one series whose line starts with `series` (name and labels). */
const seriesValue = (text: string, series: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${series} `))
    .map((l) => Number(l.slice(series.length + 1)));

describe('aggregateThreadMetrics', () => {
  it('sums counters and queue lengths, takes the largest gauge, keeps one copy of process metrics', async () => {
    const threads = [0, 1].map(() => new PrometheusMetrics({ prefix: 'gw', processMetrics: true }));
    const [a, b] = threads;
    for (let i = 0; i < 2; i++) a.recordStoreError('redis');
    for (let i = 0; i < 3; i++) b.recordStoreError('redis');
    // One shared table: every thread reports the same count.
    a.setTrackedKeys('shared', 7);
    b.setTrackedKeys('shared', 7);
    a.setQueueLength('rl.api', 1);
    b.setQueueLength('rl.api', 2);
    a.recordFailover('redis', 'local', false);
    b.recordFailover('redis', 'local', true);
    const json = await Promise.all(threads.map((t) => t.registry.getMetricsAsJSON()));
    const text = await aggregateThreadMetrics(json, 'gw');
    expect(seriesValue(text, 'gw_store_errors_total{store="redis"}')).toEqual([5]);
    expect(seriesValue(text, 'gw_tracked_keys{store="shared"}')).toEqual([7]);
    expect(seriesValue(text, 'gw_queue_length{policy="rl.api"}')).toEqual([3]);
    expect(seriesValue(text, 'gw_store_failure_mode_active{store="redis",mode="local"}')).toEqual([1]);
    const first = (await a.registry.getMetricsAsJSON()).find(
      (m) => m.name === 'gw_process_start_time_seconds',
    );
    expect(seriesValue(text, 'gw_process_start_time_seconds')).toEqual([first?.values[0].value]);
    expect(text.match(/^# TYPE gw_process_start_time_seconds gauge$/gm)).toHaveLength(1);
  });
});
