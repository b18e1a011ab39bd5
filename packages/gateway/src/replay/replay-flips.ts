import type { Verdict } from 'sluice/http';
import { outcomeOf } from './replay-engine.js';
import { admitted, type ReplayOutcome } from './replay-outcome.js';

/** Requests one configuration admits and the other limits, or the reverse. */
export interface FlipCounts {
  /** Admitted by the first configuration, limited by the other. */
  toLimited: number;
  /** Limited by the first configuration, admitted by the other. */
  toAllowed: number;
}

/**
 * The requests whose fate differs between two configurations, per policy and per key. A request limited under one
 * file is attributed to the policies that refused it there and to its key there.
 */
export class FlipTally {
  readonly totals: FlipCounts = { toLimited: 0, toAllowed: 0 };
  readonly policies = new Map<string, FlipCounts>();
  readonly keys = new Map<string, FlipCounts>();
  /** Flips of keys beyond the cap. */
  otherKeys = 0;
  readonly #keyCap: number;

  /** @param keyCap - the most keys kept by name. */
  constructor(keyCap: number) {
    this.#keyCap = keyCap;
  }

  /**
   * Compares one request's two decisions.
   *
   * @param a - the verdict under the configuration replayed.
   * @param b - the verdict under the `--against` configuration.
   */
  compare(a: Verdict, b: Verdict): void {
    const oa = outcomeOf(a);
    const ob = outcomeOf(b);
    const wasAdmitted = admitted(oa);
    if (wasAdmitted === admitted(ob)) return;
    // Refusals for other reasons (a bad target, the store) are the same under both files: only limits flip.
    if (!isLimitFlip(oa, ob)) return;
    const limitedBy = wasAdmitted ? b : a;
    const dir: keyof FlipCounts = wasAdmitted ? 'toLimited' : 'toAllowed';
    this.totals[dir]++;
    for (const o of limitedBy.decision?.violated ?? []) count(this.policies, o.policy.name, dir);
    const key = limitedBy.key ?? 'ip:unknown';
    if (this.keys.has(key) || this.keys.size < this.#keyCap) count(this.keys, key, dir);
    else this.otherKeys++;
  }
}

function isLimitFlip(a: ReplayOutcome, b: ReplayOutcome): boolean {
  return a === 'limited' || b === 'limited';
}

function count(m: Map<string, FlipCounts>, name: string, dir: keyof FlipCounts): void {
  let c = m.get(name);
  if (c === undefined) {
    c = { toLimited: 0, toAllowed: 0 };
    m.set(name, c);
  }
  c[dir]++;
}
