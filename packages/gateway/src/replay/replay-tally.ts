import { type Decision, ManyDecision, type Policy, SingleDecision } from 'sluice';
import type { Verdict } from 'sluice/http';
import { type OutcomeCounts, type ReplayOutcome, zeroCounts } from './replay-outcome.js';

/** One policy's counts: the requests it checked and what became of them. */
export interface PolicyCounts extends OutcomeCounts {
  /** The policy's name as in headers and metrics. */
  readonly policy: string;
  /** Requests this policy refused (the request may also have lacked tokens elsewhere). */
  limitedHere: number;
  /** Requests a shadow policy would have refused (shadow policies never refuse). */
  wouldLimit: number;
}

/** A key that was limited: how often, when first and last, by which policies. */
export interface LimitedKey {
  readonly key: string;
  count: number;
  firstMs: number;
  lastMs: number;
  /** The largest Retry-After (seconds) given to the key. */
  maxRetryAfter: number;
  readonly policies: Set<string>;
}

/** A limited request worth showing on its own: the first ones of the log. */
export interface LimitedSample {
  readonly line: number;
  readonly log: string;
  readonly timeMs: number;
  readonly key: string;
  readonly policies: readonly string[];
  readonly retryAfter: number;
}

/** Per-minute counts: [allowed, limited, queued, exempt, refused], then [allowed, limited, queued] per policy. */
export type MinuteRow = number[];

const TOTAL = 5;
/** Up to this many policies, a policy's index is found by comparing, not through the map. */
const FEW_POLICIES = 16;
const FIRST_LIMITED = 20;

/**
 * The running counts of one replay, kept in bounded memory: totals, per policy, per tier, per minute, and the
 * limited keys up to a cap (the store's key cap: a key beyond it is counted in `otherLimitedKeys`).
 */
export class ReplayTally {
  readonly totals: OutcomeCounts = zeroCounts();
  readonly tiers = new Map<string, OutcomeCounts>();
  readonly limitedKeys = new Map<string, LimitedKey>();
  readonly firstLimited: LimitedSample[] = [];
  /** Minute (Unix minutes) to its row. */
  readonly minutes = new Map<number, MinuteRow>();
  /** Policies in the order first seen; the index of each in the minute rows. */
  readonly policies: PolicyCounts[] = [];
  /** Limited requests of keys beyond the cap. */
  otherLimited = 0;
  readonly #policyIndex = new Map<Policy, number>();
  /** The policies in the order of {@link ReplayTally.policies}. */
  readonly #seen: Policy[] = [];
  readonly #keyCap: number;
  readonly #defaultTier: string;
  #minute = Number.NaN;
  #lastTier: string | undefined;
  #lastTierCounts: OutcomeCounts | undefined;
  #row: MinuteRow = [];

  /**
   * @param defaultTier - the tier of callers without one.
   * @param keyCap - the most limited keys kept by name.
   */
  constructor(defaultTier: string, keyCap: number) {
    this.#defaultTier = defaultTier;
    this.#keyCap = keyCap;
  }

  /**
   * Counts one decided request.
   *
   * @param v - the verdict.
   * @param outcome - what it means for the client.
   * @param timeMs - the request's time.
   * @param line - its line number, and `log` its log, for the first limited requests.
   */
  record(v: Verdict, outcome: ReplayOutcome, timeMs: number, line: number, log: string): void {
    bump(this.totals, outcome);
    const tier = v.identity?.tier ?? this.#defaultTier;
    let t = tier === this.#lastTier ? this.#lastTierCounts : this.tiers.get(tier);
    if (t === undefined) {
      t = zeroCounts();
      this.tiers.set(tier, t);
    }
    // Consecutive requests mostly come from one tier.
    this.#lastTier = tier;
    this.#lastTierCounts = t;
    bump(t, outcome);
    const row = this.#minuteRow(timeMs);
    row[
      outcome === 'allowed'
        ? 0
        : outcome === 'limited'
          ? 1
          : outcome === 'queued'
            ? 2
            : outcome === 'exempt'
              ? 3
              : 4
    ]++;
    const d = v.decision;
    if (d === undefined) return;
    // The store's decisions are read through their facts: building their outcome objects only to count them was
    // a third of the garbage of a line (D-G169).
    if (d instanceof ManyDecision) {
      for (let i = 0; i < d.size; i++) this.#policy(row, d.policyAt(i), d.limitedAt(i), outcome);
    } else if (d instanceof SingleDecision) this.#policy(row, d.policy, d.limited, outcome);
    else {
      const outcomes = d.outcomes;
      for (let i = 0; i < outcomes.length; i++)
        this.#policy(row, outcomes[i].policy, outcomes[i].limited, outcome);
    }
    if (outcome === 'limited') this.#limited(v, timeMs, line, log);
  }

  /** Counts one policy of a decided request, in its minute's row too. */
  #policy(row: MinuteRow, policy: Policy, limited: boolean, outcome: ReplayOutcome): void {
    const pi = this.#indexOf(policy);
    const p = this.policies[pi];
    bump(p, outcome);
    if (limited) {
      if (policy.shadow) p.wouldLimit++;
      else if (outcome === 'limited') p.limitedHere++;
    }
    const at = TOTAL + pi * 3;
    while (row.length < at + 3) row.push(0);
    if (outcome === 'allowed' || outcome === 'exempt') row[at]++;
    else if (outcome === 'limited') row[at + 1]++;
    else if (outcome === 'queued') row[at + 2]++;
  }

  #limited(v: Verdict, timeMs: number, line: number, log: string): void {
    const d = v.decision!;
    const key = v.key ?? 'ip:unknown';
    // Read once: the decision computes it from its facts on every read.
    const retryAfter = d.retryAfterSeconds;
    if (this.firstLimited.length < FIRST_LIMITED)
      this.firstLimited.push({ line, log, timeMs, key, policies: violatedNames(d), retryAfter });
    let k = this.limitedKeys.get(key);
    if (k === undefined) {
      if (this.limitedKeys.size >= this.#keyCap) {
        this.otherLimited++;
        return;
      }
      k = { key, count: 0, firstMs: timeMs, lastMs: timeMs, maxRetryAfter: 0, policies: new Set() };
      this.limitedKeys.set(key, k);
    }
    k.count++;
    k.lastMs = timeMs;
    if (retryAfter > k.maxRetryAfter) k.maxRetryAfter = retryAfter;
    // The names straight into the key's set, in the same order, without a list per limited line.
    if (d instanceof ManyDecision) {
      for (let i = 0; i < d.size; i++) {
        const p = d.policyAt(i);
        if (d.limitedAt(i) && !p.shadow) k.policies.add(p.name);
      }
    } else for (const n of violatedNames(d)) k.policies.add(n);
  }

  #indexOf(policy: Policy): number {
    // A configuration has a handful of policies: comparing them is cheaper than hashing one, per outcome.
    const seen = this.#seen;
    if (seen.length <= FEW_POLICIES) {
      for (let j = 0; j < seen.length; j++) if (seen[j] === policy) return j;
    }
    let i = this.#policyIndex.get(policy);
    if (i === undefined) {
      i = this.policies.length;
      this.#policyIndex.set(policy, i);
      seen.push(policy);
      this.policies.push({ policy: policy.name, ...zeroCounts(), limitedHere: 0, wouldLimit: 0 });
    }
    return i;
  }

  #minuteRow(timeMs: number): MinuteRow {
    const m = Math.floor(timeMs / 60_000);
    if (m === this.#minute) return this.#row;
    let row = this.minutes.get(m);
    if (row === undefined) {
      row = [0, 0, 0, 0, 0];
      this.minutes.set(m, row);
    }
    this.#minute = m;
    this.#row = row;
    return row;
  }
}

/** The names of the enforcing policies that refused a decision, in order (its `violated`, read from its facts). */
function violatedNames(d: Decision): string[] {
  if (!(d instanceof ManyDecision)) return d.violated.map((o) => o.policy.name);
  const names: string[] = [];
  for (let i = 0; i < d.size; i++) {
    const p = d.policyAt(i);
    if (d.limitedAt(i) && !p.shadow) names.push(p.name);
  }
  return names;
}

function bump(c: OutcomeCounts, o: ReplayOutcome): void {
  c.requests++;
  // A switch, not `c[o]++`: a property named by a variable is a keyed access on every call.
  switch (o) {
    case 'allowed':
      c.allowed++;
      break;
    case 'limited':
      c.limited++;
      break;
    case 'queued':
      c.queued++;
      break;
    case 'exempt':
      c.exempt++;
      break;
    default:
      c.refused++;
  }
}
