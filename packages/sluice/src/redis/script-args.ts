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
 * call of one plain decide (one key, one continuous policy, no queue, no shadow mode) goes in a short form of
 * seven arguments that the script answers on a shorter path.
 */
export class ScriptArgs {
  readonly #slack: string;
  readonly #policyArgs = new WeakMap<Policy, readonly string[]>();

  /**
   * @param slack - extra milliseconds of key TTL, as a string: `'60000'` with an injected clock (which need not
   * run at the server's pace), else `'0'`.
   */
  constructor(slack: string) {
    this.#slack = slack;
  }

  /** The keys and arguments of one script call carrying `entries`, in order. */
  encode(entries: readonly Entry[]): ScriptCall {
    if (entries.length === 1) {
      const e = entries[0];
      const p = e.checks.length === 1 ? e.checks[0].policy : undefined;
      // The short form (see lua-script.ts): one decide under one continuous policy without queue or shadow mode.
      if (p !== undefined && e.op === 'd' && p.stepMs === 0 && !p.shadow && (p.queue?.limit ?? 0) === 0) {
        const pa = this.#argsOf(p);
        return {
          keys: e.keys as string[],
          args: [this.#slack, 'D', pa[0], pa[1], pa[2], String(e.cost), e.now],
        };
      }
    }
    const keys: string[] = [];
    // A call names a handful of policies: a linear search beats a Map allocated per call.
    const policies: Policy[] = [];
    const args: string[] = [this.#slack, ''];
    for (const e of entries) {
      for (const c of e.checks) {
        if (policies.includes(c.policy)) continue;
        policies.push(c.policy);
        for (const a of this.#argsOf(c.policy)) args.push(a);
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

  /** A policy's seven arguments, built once per policy object. */
  #argsOf(p: Policy): readonly string[] {
    let args = this.#policyArgs.get(p);
    if (args === undefined) {
      args = Object.freeze(policyArgs(p));
      this.#policyArgs.set(p, args);
    }
    return args;
  }
}

/**
 * A policy's seven script arguments (lua-script.ts): quota, unitsPerToken, burst, shadow (1/0), queue limit,
 * queue maxWaitMs, step ms (0: continuous refill).
 */
export function policyArgs(p: Policy): string[] {
  return [
    String(p.quota),
    String(p.unitsPerToken),
    String(p.burst),
    p.shadow ? '1' : '0',
    String(p.queue?.limit ?? 0),
    String(p.queue?.maxWaitMs ?? 0),
    String(p.stepMs),
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
