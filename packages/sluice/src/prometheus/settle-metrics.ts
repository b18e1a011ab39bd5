import type { Counter, Registry } from 'prom-client';
import { invalidOption } from '../core/index.js';
import type { SettleEvents } from '../http/settle-observer.js';
import { promClient } from './prom-client.js';

/** Options of {@link PrometheusSettleMetrics}. */
export interface PrometheusSettleMetricsOptions {
  /** The registry to register in, usually `PrometheusMetrics.registry`. */
  readonly registry: Registry;
  /** Metric name prefix; default `sluice`. */
  readonly prefix?: string;
  /** Most distinct policy names (and rule names) given a series; later ones are counted as `other`. Default 100. */
  readonly maxLabelValues?: number;
}

const PREFIX = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const UNITS = new Set(['tokens', 'bytes', 'units', 'requests']);

/**
 * Costs settled from responses as Prometheus series: `<prefix>_units_total{policy,unit}`, the units charged per
 * policy after settlement (tokens a model spent, bytes sent, units an upstream named, requests that counted), and
 * `<prefix>_settle_fallbacks_total{rule,reason}`, answers whose cost could not be read. Pass it as the
 * `settleMetrics` option of `createHttpLimiter`. Labels are bounded: policy and rule names come from the
 * configuration, and past `maxLabelValues` of them are counted as `other`.
 */
export class PrometheusSettleMetrics implements SettleEvents {
  readonly #units: Counter<string>;
  readonly #fallbacks: Counter<string>;
  readonly #seen = new Set<string>();
  readonly #max: number;

  /**
   * @param options - the registry, the prefix and the label bound.
   * @throws SluiceError `ERR_INVALID_OPTION` for a prefix that cannot start a metric name.
   */
  constructor(options: PrometheusSettleMetricsOptions) {
    const prefix = options.prefix ?? 'sluice';
    if (typeof prefix !== 'string' || !PREFIX.test(prefix)) {
      throw invalidOption('prefix', 'a metric name prefix matching [a-zA-Z_][a-zA-Z0-9_]*', prefix);
    }
    this.#max = options.maxLabelValues ?? 100;
    this.#units = new promClient.Counter({
      name: `${prefix}_units_total`,
      help: 'Units charged per policy after the response settled its cost (unit: tokens, bytes, units, requests).',
      labelNames: ['policy', 'unit'],
      registers: [options.registry],
    });
    this.#fallbacks = new promClient.Counter({
      name: `${prefix}_settle_fallbacks_total`,
      help: 'Responses whose cost could not be read (a header missing or not a count, no JSON usage): the fallback was charged.',
      labelNames: ['rule', 'reason'],
      registers: [options.registry],
    });
  }

  recordUnits(policy: string, unit: string, units: number): void {
    if (!(units > 0) || !Number.isFinite(units)) return;
    this.#units.inc({ policy: this.#label(policy), unit: UNITS.has(unit) ? unit : 'other' }, units);
  }

  recordSettleFallback(rule: string, reason: string): void {
    this.#fallbacks.inc({ rule: this.#label(rule), reason });
  }

  #label(value: string): string {
    if (this.#seen.has(value)) return value;
    if (this.#seen.size >= this.#max) return 'other';
    this.#seen.add(value);
    return value;
  }
}
