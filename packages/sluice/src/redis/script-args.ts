import type { Policy } from '../core/index.js';
import type { Entry } from './batch-queue.js';

/** The KEYS and ARGV of one script call. */
export interface ScriptCall {
  readonly keys: string[];
  readonly args: string[];
}

/**
 * Encodes batches of calls as the rate-limit script's arguments (the layout is documented in lua-script.ts):
 * the clock slack and the call's policies first, once each; then runs of entries that share op, cost, clock
 * reading and policies, each run naming its policies by index and costing a few arguments besides its keys. A
 * call of plain decides (distinct keys, each under the same continuous policy without queue or shadow mode, at one
 * cost and one clock reading: one decide, or a batch of concurrent ones) goes in a short form of three arguments
 * (five with an injected clock) that the script answers on a shorter path, with one integer per decide.
 */
export class ScriptArgs {
  readonly #slack: string;
  readonly #lease: readonly [string, string];
  readonly #policyArgs = new WeakMap<Policy, readonly string[]>();

  /**
   * @param slack - extra milliseconds of key TTL, as a string: `'60000'` with an injected clock (which
   * need not run at the server's pace), else `'0'`.
   * @param instance - this store's id among the stores holding concurrency slots (no `=`, `,` or `@`).
   * @param leaseMs - how long the slots it holds outlive its last renewal, in milliseconds.
   */
  constructor(slack: string, instance = 'i', leaseMs = 5_000) {
    this.#slack = slack;
    this.#lease = [instance, String(leaseMs)];
  }

  /** The keys and arguments of one script call carrying `entries`, in order. */
  encode(entries: readonly Entry[]): ScriptCall {
    const p = shortPolicy(entries);
    if (p !== undefined) {
      // The short form (see lua-script.ts): decides of distinct keys under one continuous policy without queue or
      // shadow mode, at one cost and one clock reading.
      const e = entries[0];
      const pa = this.#argsOf(p);
      // Products, not factors (D-R11): integers below 2^53 for any valid policy and any cost up to its burst (a
      // larger cost is denied whatever its digits).
      const need = String(e.cost * p.unitsPerToken);
      // The server's clock needs neither a reading nor a slack: three arguments instead of five.
      const args =
        e.now === '' && this.#slack === '0' ? [pa[0], pa[7], need] : [pa[0], pa[7], need, e.now, this.#slack];
      if (entries.length === 1) return { keys: e.keys as string[], args };
      const keys: string[] = new Array(entries.length);
      for (let i = 0; i < entries.length; i++) keys[i] = entries[i].keys[0];
      return { keys, args };
    }
    const keys: string[] = [];
    // A call names a handful of policies: a linear search beats a Map allocated per call.
    const policies: Policy[] = [];
    const args: string[] = [this.#slack, ''];
    for (const e of entries) {
      for (const c of e.checks) {
        if (policies.includes(c.policy)) continue;
        policies.push(c.policy);
        const pa = this.#argsOf(c.policy);
        // Every argument but the last (the short form's capacity): seven, nine for a concurrency policy.
        for (let i = 0; i < pa.length - 1; i++) args.push(pa[i]);
      }
    }
    args[1] = String(policies.length);
    let run: Entry | undefined;
    let countAt = 0;
    let count = 0;
    for (const e of entries) {
      if (run === undefined || !sameShape(run, e)) {
        if (run !== undefined) args[countAt] = String(count);
        run = e;
        count = 0;
        args.push(e.op, String(e.cost), e.now, String(e.checks.length));
        for (const c of e.checks) args.push(String(policies.indexOf(c.policy) + 1));
        countAt = args.length;
        args.push('');
      }
      count++;
      for (const k of e.keys) keys.push(k);
    }
    args[countAt] = String(count);
    return { keys, args };
  }

  /**
   * A policy's arguments of the general form (seven; a concurrency policy's step is `-1`, followed by this store's
   * instance id and lease milliseconds), then its capacity in units (for the short form), built once.
   */
  #argsOf(p: Policy): readonly string[] {
    let args = this.#policyArgs.get(p);
    if (args === undefined) {
      const general = policyArgs(p);
      if (p.concurrent > 0) general.push(...this.#lease);
      args = Object.freeze([...general, String(p.burst * p.unitsPerToken)]);
      this.#policyArgs.set(p, args);
    }
    return args;
  }
}

/** Most keys of one short-form call: the script reads them with one MGET. */
const SHORT_MAX_KEYS = 1_000;

/**
 * The policy of a call that can go in the short form, or undefined: every entry a decide of one key under the
 * same continuous policy without queue or shadow mode, at the same cost and clock reading, no key twice (the short
 * path reads every bucket before it writes any), at most {@link SHORT_MAX_KEYS} entries.
 */
function shortPolicy(entries: readonly Entry[]): Policy | undefined {
  const n = entries.length;
  const e = entries[0];
  if (n > SHORT_MAX_KEYS || e.op !== 'd' || e.checks.length !== 1) return undefined;
  const p = e.checks[0].policy;
  // A concurrency policy's slots are leases, which only the general form keeps.
  if (p.stepMs !== 0 || p.shadow || p.concurrent > 0 || (p.queue?.limit ?? 0) !== 0) return undefined;
  if (n === 1) return p;
  for (let i = 1; i < n; i++) {
    const o = entries[i];
    if (
      o.op !== 'd' ||
      o.checks.length !== 1 ||
      o.checks[0].policy !== p ||
      o.cost !== e.cost ||
      o.now !== e.now
    ) {
      return undefined;
    }
  }
  // Distinct keys: a Set for this call only (a batch, not a decision, pays for it).
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) {
    const k = entries[i].keys[0];
    if (seen.has(k)) return undefined;
    seen.add(k);
  }
  return p;
}

/**
 * A policy's seven script arguments (lua-script.ts): quota, unitsPerToken, burst, shadow (1/0), queue limit,
 * queue maxWaitMs, step ms (0: continuous refill; -1: a concurrency policy, whose slots never refill).
 */
export function policyArgs(p: Policy): string[] {
  return [
    String(p.quota),
    String(p.unitsPerToken),
    String(p.burst),
    p.shadow ? '1' : '0',
    String(p.queue?.limit ?? 0),
    String(p.queue?.maxWaitMs ?? 0),
    p.concurrent > 0 ? '-1' : String(p.stepMs),
  ];
}

/** True when two entries can share a run of the script's arguments: everything but their keys is equal. */
function sameShape(a: Entry, b: Entry): boolean {
  if (a.op !== b.op || a.cost !== b.cost || a.now !== b.now) return false;
  const n = a.checks.length;
  if (b.checks.length !== n) return false;
  for (let i = 0; i < n; i++) if (a.checks[i].policy !== b.checks[i].policy) return false;
  return true;
}
