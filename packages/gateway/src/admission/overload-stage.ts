import type { ResponseEnd, ResponseObserver } from 'sluice/http';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { OverloadConfig, Priority } from '../config/resolve-overload.js';
import type { InFlightCount } from './in-flight-count.js';
import { LoadShedder } from './load-shedder.js';

/** What {@link OverloadStage.enter} answers for a request it sheds. */
export const SHED = Symbol('shed');

/**
 * What the stage reads of an admitted request (an `Admission` that is not a denial): its kind, the reason of an
 * exemption, its tier. Structural, so admission's module and this one do not import each other.
 */
export interface AdmittedFacts {
  readonly kind: 'allow' | 'exempt';
  readonly reason?: string;
  readonly tier: string | undefined;
}

/** The prefix of the rule that carries a tier's buckets (as `limits/gateway-limits.ts` names it). */
const TIER_RULE = 'tier:';

/**
 * Load shedding, the admission stage after the rate limits (`overload:`): a request admitted by its limits is
 * counted in flight toward the upstream, or refused with 503 when the requests in flight are at its priority's
 * share of the limit. Its priority is that of the first endpoint rule it matched that sets one, else its tier's,
 * else `normal`; a request to an exempt endpoint is never shed. Built per configuration; the {@link LoadShedder}
 * (the count in flight and what an adaptive limit learned) carries over a reload.
 */
export class OverloadStage {
  readonly config: OverloadConfig;
  readonly shedder: LoadShedder;
  readonly #tiers: GatewayConfig['tiers'];
  readonly #rules: ReadonlyMap<string, Priority>;
  /** Priority per matched-rule list: `sluice/http` gives one frozen list per combination of rules. */
  readonly #byRules = new WeakMap<readonly string[], Priority>();

  /**
   * @param config - the configuration (its tiers' and endpoint rules' priorities).
   * @param overload - its `overload:` section.
   * @param previous - the stage of the configuration being replaced, whose shedder is kept.
   * @param count - where a new shedder counts requests in flight (shared by the threads of a process).
   */
  constructor(
    config: GatewayConfig,
    overload: OverloadConfig,
    previous?: OverloadStage,
    count?: InFlightCount,
  ) {
    this.config = overload;
    this.#tiers = config.tiers;
    const rules = new Map<string, Priority>();
    for (const e of config.endpoints)
      if (e.priority !== undefined && !rules.has(e.name)) rules.set(e.name, e.priority);
    this.#rules = rules;
    if (previous === undefined) this.shedder = new LoadShedder(overload, count);
    else {
      this.shedder = previous.shedder;
      this.shedder.configure(overload);
    }
  }

  /** The priority of an admitted request, or `undefined` for one never shed (an exempt endpoint). */
  priorityOf(a: AdmittedFacts, rules: readonly string[] | undefined): Priority | undefined {
    if (a.kind === 'exempt' && a.reason === 'endpoint') return undefined;
    if (rules !== undefined && rules.length > 0) {
      let p = this.#byRules.get(rules);
      if (p === undefined) {
        p = this.#fromRules(rules);
        this.#byRules.set(rules, p);
      }
      return p;
    }
    return (a.tier === undefined ? undefined : this.#tiers[a.tier]?.priority) ?? 'normal';
  }

  /**
   * Counts an admitted request in flight toward the upstream, or sheds it.
   *
   * @param a - the admission.
   * @param rules - the names of the rules it matched (the verdict's), if any.
   * @param nowMs - a monotonic clock's milliseconds (`performance.now()`), for its latency.
   * @returns what the request holds until its response ends (end it exactly once), {@link SHED} when refused,
   *   or `undefined` when it is never shed.
   */
  enter(
    a: AdmittedFacts,
    rules: readonly string[] | undefined,
    nowMs: number,
  ): ResponseObserver | typeof SHED | undefined {
    const priority = this.priorityOf(a, rules);
    if (priority === undefined) return undefined;
    const at = this.shedder.tryEnter(priority);
    return at === 0 ? SHED : new ShedHold(this.shedder, at, nowMs);
  }

  #fromRules(rules: readonly string[]): Priority {
    let tier: Priority | undefined;
    for (const name of rules) {
      if (name.startsWith(TIER_RULE)) tier ??= this.#tiers[name.slice(TIER_RULE.length)]?.priority;
      else {
        const p = this.#rules.get(name);
        if (p !== undefined) return p;
      }
    }
    return tier ?? 'normal';
  }
}

/** A request counted in flight toward the upstream until its response ends. */
class ShedHold implements ResponseObserver {
  #ended = false;
  constructor(
    readonly shedder: LoadShedder,
    readonly atEntry: number,
    readonly startMs: number,
  ) {}

  end(e: ResponseEnd): void {
    if (this.#ended) return;
    this.#ended = true;
    this.shedder.release(performance.now() - this.startMs, e.completed, this.atEntry);
  }
}
