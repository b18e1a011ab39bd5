import type { Check, Decision, MaybePromise, PolicyOutcome, RateLimitStore } from '../core/index.js';
import { isPromiseLike, whenReady } from './maybe-promise.js';
import type { CompiledRule } from './rules.js';
import { type SettleEvents, type SettleGroup, SettleObserver } from './settle-observer.js';
import type { HttpRequestInfo } from './types.js';

/** One rule of a plan that settles a cost or counts only some responses, and the checks it keys. */
interface Part {
  readonly rule: CompiledRule;
  readonly indexes: readonly number[];
}

/**
 * The settling rules of one combination of matching rules, found once per plan: which of the plan's checks each
 * keys. A plan without such a rule has none, and its requests get no observer and allocate nothing more.
 */
export class SettlePlan {
  readonly #parts: readonly Part[];

  /**
   * The settle plan of a rule plan, or `undefined` when none of its rules settles or counts.
   *
   * @param keyedBy - per check of the plan, the rule that keys it.
   */
  static of(keyedBy: readonly CompiledRule[]): SettlePlan | undefined {
    const parts: Part[] = [];
    keyedBy.forEach((rule, i) => {
      if (rule.settle === undefined && rule.count === undefined) return;
      const part = parts.find((p) => p.rule === rule);
      if (part === undefined) parts.push({ rule, indexes: [i] });
      else (part.indexes as number[]).push(i);
    });
    return parts.length === 0 ? undefined : new SettlePlan(parts);
  }

  private constructor(parts: readonly Part[]) {
    this.#parts = parts;
  }

  /**
   * Admits a request's reservations: for each settling rule whose `reserve` is above the plan's cost, the
   * difference is taken from its checks, all or nothing with what the plan already took. A request the buckets
   * cannot cover is refused up front: what was taken is given back and the denial is the reservation's decision.
   *
   * @param decided - the plan's allowed decision at `cost`.
   * @returns the decision to answer with (the plan's, with the reserving checks' outcomes after the reservation,
   *   or the reservation's denial), and the tokens each part's checks were charged.
   */
  admit(
    store: RateLimitStore,
    req: HttpRequestInfo,
    checks: readonly Check[],
    cost: number,
    decided: Decision,
  ): MaybePromise<Admitted> {
    const parts = this.#parts;
    const admitted = new Array<number>(parts.length).fill(cost);
    const step = (i: number, d: Decision): MaybePromise<Admitted> => {
      for (; i < parts.length; i++) {
        const reserve = reservationOf(parts[i].rule, req);
        if (reserve <= cost) continue;
        const own = parts[i].indexes.map((x) => checks[x]);
        if (beyondBurst(own, reserve)) return this.#beyondBurst(store, checks, cost, admitted, i, reserve);
        const extra = reserve - cost;
        admitted[i] = reserve;
        const next = i + 1;
        const r = store.decide(own, extra);
        const after = (e: Decision): MaybePromise<Admitted> => {
          const merged = merge(d, e, parts[next - 1].indexes);
          if (e.allowed) return step(next, merged);
          // Refused up front: what the plan and earlier reservations took goes back.
          return whenDone(this.#giveBack(store, checks, cost, admitted, next - 1), () => ({
            decision: merged,
            admitted,
          }));
        };
        return isPromiseLike(r) ? r.then(after) : after(r);
      }
      return { decision: d, admitted };
    };
    return step(0, decided);
  }

  /**
   * A denial of the plan, made honest about the reservations: a request that waits out the plan's Retry-After
   * must also find its reservation there, so each reserving rule's buckets are peeked at the reservation and the
   * later of the two waits is answered.
   */
  refused(
    store: RateLimitStore,
    req: HttpRequestInfo,
    checks: readonly Check[],
    cost: number,
    d: Decision,
  ): MaybePromise<Decision> {
    const parts = this.#parts;
    let out: MaybePromise<Decision> = d;
    for (let i = 0; i < parts.length; i++) {
      const reserve = reservationOf(parts[i].rule, req);
      if (reserve <= cost) continue;
      const indexes = parts[i].indexes;
      const peeked = store.peek(
        indexes.map((x) => checks[x]),
        reserve,
      );
      const later = (prev: Decision, p: Decision): Decision => {
        if (p.retryAfterSeconds <= prev.retryAfterSeconds) return prev;
        const m = merge(prev, p, indexes);
        return { ...m, allowed: false, reason: prev.reason, violated: prev.violated };
      };
      const prev: MaybePromise<Decision> = out;
      out = isPromiseLike<Decision>(prev)
        ? prev.then((a: Decision) => whenReady(peeked, (p: Decision) => later(a, p)))
        : whenReady(peeked, (p: Decision) => later(prev, p));
    }
    return out;
  }

  /**
   * The observer of an admitted request.
   *
   * @param admitted - per part, the tokens its checks were charged at admission.
   */
  observer(
    store: RateLimitStore,
    checks: readonly Check[],
    admitted: readonly number[],
    events: SettleEvents | undefined,
    onError: ((error: unknown) => void) | undefined,
  ): SettleObserver {
    const groups: SettleGroup[] = this.#parts.map((p, i) => ({
      rule: p.rule.name,
      checks: p.indexes.map((x) => checks[x]),
      admitted: admitted[i],
      settlement: p.rule.settle,
      count: p.rule.count,
    }));
    return new SettleObserver(store, groups, events, onError);
  }

  /**
   * Refuses a reservation above the burst of one of part `i`'s checks without deciding it: no wait can ever meet
   * it. What the plan and earlier reservations took goes back first, and the refusal describes the buckets as they
   * are then (peeked: nothing charged, so `r` and `t` are the bucket's own), with no wait to advise.
   */
  #beyondBurst(
    store: RateLimitStore,
    checks: readonly Check[],
    cost: number,
    admitted: number[],
    i: number,
    reserve: number,
  ): MaybePromise<Admitted> {
    const indexes = this.#parts[i].indexes;
    const peekAll = (): MaybePromise<Admitted> =>
      whenReady(store.peek(checks, 1), (p: Decision) => ({
        decision: beyondBurstDecision(p.outcomes, indexes, reserve),
        admitted,
      }));
    const back = this.#giveBack(store, checks, cost, admitted, i);
    return isPromiseLike(back) ? back.then(peekAll) : peekAll();
  }

  #giveBack(
    store: RateLimitStore,
    checks: readonly Check[],
    cost: number,
    admitted: readonly number[],
    upTo: number,
  ): MaybePromise<unknown> {
    const all: MaybePromise<unknown>[] = [store.refund(checks, cost)];
    for (let i = 0; i < upTo; i++) {
      if (admitted[i] > cost) {
        all.push(
          store.refund(
            this.#parts[i].indexes.map((x) => checks[x]),
            admitted[i] - cost,
          ),
        );
      }
    }
    return all.some(isPromiseLike) ? Promise.all(all) : undefined;
  }
}

/** A request's admission with its reservations. */
export interface Admitted {
  readonly decision: Decision;
  /** Per part of the settle plan, the tokens its checks were charged. */
  readonly admitted: readonly number[];
}

/** A rule's reservation for a request: its `settle.reserve`, else nothing above the plan's cost. */
function reservationOf(rule: CompiledRule, req: HttpRequestInfo): number {
  const r = rule.settle?.reserve;
  if (r === undefined) return 0;
  const n = typeof r === 'function' ? r(req) : r;
  // A reservation function that answers nonsense reserves nothing more, rather than failing the request.
  return Number.isSafeInteger(n) && n >= 1 ? n : 0;
}

/**
 * True when a reservation is above the burst of one of its checks. Only the part above the plan's cost is decided,
 * so the store alone would call a reservation of burst + 1 `limited` and send the client to retry forever.
 */
function beyondBurst(checks: readonly Check[], reserve: number): boolean {
  // A shadow policy never refuses: its burst is left to the store, which records what it would have done.
  for (const c of checks) if (!c.policy.shadow && reserve > c.policy.burst) return true;
  return false;
}

/** The plan's decision with the reserving checks' outcomes replaced by the reservation's. */
function merge(plan: Decision, reservation: Decision, indexes: readonly number[]): Decision {
  const outcomes: PolicyOutcome[] = plan.outcomes.slice();
  indexes.forEach((x, i) => {
    outcomes[x] = reservation.outcomes[i];
  });
  return {
    allowed: reservation.allowed,
    reason: reservation.allowed ? plan.reason : reservation.reason,
    cost: plan.cost,
    retryAfterSeconds: reservation.allowed ? plan.retryAfterSeconds : reservation.retryAfterSeconds,
    delayMs: plan.delayMs,
    outcomes,
    violated: reservation.allowed ? plan.violated : reservation.violated,
  };
}

/**
 * The refusal of a reservation above a burst: the buckets as peeked, the reserving checks whose burst it exceeds
 * marked limited with no wait (`retryAfterSeconds` 0), and the reservation as the cost the refusal names.
 *
 * @param peeked - every check's outcome, peeked after what the plan took went back.
 * @param indexes - the reserving part's checks.
 */
function beyondBurstDecision(
  peeked: readonly PolicyOutcome[],
  indexes: readonly number[],
  reserve: number,
): Decision {
  const outcomes: PolicyOutcome[] = peeked.map((o) => ({ ...o, limited: false, retryAfterSeconds: 0 }));
  const violated: PolicyOutcome[] = [];
  for (const x of indexes) {
    if (reserve <= outcomes[x].policy.burst || outcomes[x].policy.shadow) continue;
    outcomes[x] = { ...outcomes[x], limited: true };
    violated.push(outcomes[x]);
  }
  return {
    allowed: false,
    reason: 'cost_exceeds_burst',
    cost: reserve,
    retryAfterSeconds: 0,
    delayMs: 0,
    outcomes,
    violated,
  };
}

function whenDone<T>(r: MaybePromise<unknown>, then: () => T): MaybePromise<T> {
  return isPromiseLike(r) ? r.then(then) : then();
}
