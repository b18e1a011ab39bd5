import type { Registry } from 'prom-client';
import type { SettleEvents } from 'sluice/http';
import { PrometheusSettleMetrics } from 'sluice/prometheus';

/** What the report warns through: the gateway's logger. */
export interface WarnLogger {
  warn(facts: object, message: string): void;
}

/** Policies whose units the dashboard's totals keep. */
const MAX_POLICIES = 100;

/** A warning about the same rule and reason is logged at most this often. */
const WARN_EVERY_MS = 60_000;

/**
 * Where the gateway's settled costs go: `<prefix>_units_total{policy,unit}` and
 * `<prefix>_settle_fallbacks_total{rule,reason}` in the gateway's registry, and a warning, at most once a minute
 * per rule and reason, when an upstream's answer carries no readable cost (the fallback was charged: an operator
 * should see an upstream that stopped sending its cost header or its usage).
 */
export class SettleReport implements SettleEvents {
  readonly #registry: () => Registry;
  readonly #prefix: string;
  readonly #logger: WarnLogger;
  readonly #now: () => number;
  readonly #warned = new Map<string, { at: number; since: number }>();
  /** Units charged since start, per policy (bounded like the metric's labels: the configuration's policies). */
  readonly #totals = new Map<string, { readonly unit: string; units: number }>();
  #metrics: PrometheusSettleMetrics | undefined;

  /**
   * @param registry - the gateway's registry, read at the first report (the metrics are built after the runtime).
   * @param prefix - the metric name prefix.
   * @param logger - where the warnings go.
   * @param now - wall-clock milliseconds.
   */
  constructor(registry: () => Registry, prefix: string, logger: WarnLogger, now: () => number) {
    this.#registry = registry;
    this.#prefix = prefix;
    this.#logger = logger;
    this.#now = now;
  }

  recordUnits(policy: string, unit: string, units: number): void {
    this.#sink().recordUnits(policy, unit, units);
    if (!(units > 0)) return;
    const t = this.#totals.get(policy);
    if (t !== undefined) t.units += units;
    else if (this.#totals.size < MAX_POLICIES) this.#totals.set(policy, { unit, units });
  }

  /** Units charged since the gateway started, per policy, largest first: what the dashboard shows. */
  totals(): { readonly policy: string; readonly unit: string; readonly units: number }[] {
    return [...this.#totals]
      .map(([policy, t]) => ({ policy, unit: t.unit, units: t.units }))
      .sort((a, b) => b.units - a.units);
  }

  recordSettleFallback(rule: string, reason: string): void {
    this.#sink().recordSettleFallback(rule, reason);
    const id = `${rule}\u0000${reason}`;
    const now = this.#now();
    const w = this.#warned.get(id);
    if (w !== undefined && now - w.at < WARN_EVERY_MS) {
      w.since++;
      return;
    }
    this.#warned.set(id, { at: now, since: 0 });
    this.#logger.warn(
      { rule, reason, alsoSince: w?.since ?? 0 },
      `the cost of a response to rule ${rule} could not be read (${reason}): the fallback was charged`,
    );
  }

  #sink(): PrometheusSettleMetrics {
    this.#metrics ??= new PrometheusSettleMetrics({ registry: this.#registry(), prefix: this.#prefix });
    return this.#metrics;
  }
}
