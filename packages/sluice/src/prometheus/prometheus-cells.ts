import type { Counter, Registry } from 'prom-client';
import { invalidOption } from '../core/index.js';
import type { ChildCache } from '../metrics/index.js';
import { DEFAULT_LATENCY_BUCKETS } from './cell-histogram.js';
import { promClient } from './prom-client.js';
import type { PrometheusMetricNames } from './prometheus-metric-names.js';

/** A running value with its frozen label set; counting into it allocates nothing. */
export interface Cell {
  readonly labels: Readonly<Record<string, string>>;
  value: number;
}

/** A counter that reads its values from cells when scraped, so recording allocates nothing. */
export function cellCounter(
  name: string,
  help: string,
  labelNames: string[],
  registers: Registry[],
  cells: ChildCache<Cell>,
): Counter<string> {
  return new promClient.Counter({
    name,
    help,
    labelNames,
    registers,
    collect() {
      this.reset();
      for (const cell of cells.values) this.inc(cell.labels, cell.value);
    },
  });
}

/** Validates `latencyBuckets`: ascending, finite, positive; default {@link DEFAULT_LATENCY_BUCKETS}. */
export function bucketsOption(value: unknown): readonly number[] {
  if (value === undefined) return DEFAULT_LATENCY_BUCKETS;
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.some(
      (v, i) => typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || (i > 0 && v <= value[i - 1]),
    )
  ) {
    throw invalidOption('latencyBuckets', 'a non-empty ascending array of finite positive numbers', value);
  }
  return Object.freeze([...value]);
}

/** A store's failure-mode state by store and mode: switches counted, active 1 or 0. */
export interface FailoverCell {
  switches: number;
  active: number;
  labels: Record<string, string>;
}

/** Registers the failure-mode switch counter and the active gauge, read from the cells when scraped. */
export function failoverMetrics(
  n: PrometheusMetricNames,
  registers: Registry[],
  failover: ReadonlyMap<string, FailoverCell>,
): void {
  new promClient.Counter({
    name: n.failoverSwitches,
    help: 'Times a store entered its failure mode (could not answer, so open or closed applied).',
    labelNames: ['store', 'mode'],
    registers,
    collect() {
      this.reset();
      for (const f of failover.values()) this.inc(f.labels, f.switches);
    },
  });
  new promClient.Gauge({
    name: n.failoverActive,
    help: '1 while a store is in its failure mode, else 0.',
    labelNames: ['store', 'mode'],
    registers,
    collect() {
      this.reset();
      for (const f of failover.values()) this.set(f.labels, f.active);
    },
  });
}
