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
 * three arguments (five with an injected clock) that the script answers on a shorter path, with one integer.
 */
export class ScriptArgs {
  readonly #slack: string;
  readonly #policyArgs = new WeakMap<Policy, readonly string[]>();

  /**
   * @param slack - extra milliseconds of key TTL, as a string: `'60000'` with an injected clock (which
   * need not run at the server's pace), else `'0'`.
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
        // Products, not factors (D-R11): integers below 2^53 for any valid policy and any cost up to its burst (a
        // larger cost is denied whatever its digits).
        const need = String(e.cost * p.unitsPerToken);
        // The server's clock needs neither a reading nor a slack: three arguments instead of five.
        const args =
          e.now === '' && this.#slack === '0'
            ? [pa[0], pa[7], need]
            : [pa[0], pa[7], need, e.now, this.#slack];
        return { keys: e.keys as string[], args };
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
        const pa = this.#argsOf(c.policy);
        for (let i = 0; i < POLICY_ARGS; i++) args.push(pa[i]);
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

  /** A policy's seven arguments of the general form, then its capacity in units (for the short form), built once. */
  #argsOf(p: Policy): readonly string[] {
    let args = this.#policyArgs.get(p);
    if (args === undefined) {
      args = Object.freeze([...policyArgs(p), String(p.burst * p.unitsPerToken)]);
      this.#policyArgs.set(p, args);
    }
    return args;
  }
}

/** How many arguments describe a policy in the script's general form. */
const POLICY_ARGS = 7;

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
