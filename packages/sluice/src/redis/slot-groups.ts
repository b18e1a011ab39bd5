/*
 * The checks of one call whose keys fall in different Redis Cluster slots (a tenant's policy beside a policy keyed
 * by IP). One script can only touch keys of one slot, so each slot's checks run in their own script call, all sent
 * at once; a denial in any slot gives back what the other slots took, the way a queue refusal gives back its
 * tokens elsewhere. Not atomic across slots: between the take and the give back, another call may see those
 * buckets lower than they end up (see docs/guide/stores-and-fleets.md).
 */
import type { Check, Decision, EvaluateMode, PolicyOutcome } from '../core/index.js';
import { clusterSlot } from './cluster-slot.js';
import type { KeyLayout } from './key-layout.js';

/** The checks of one call that share a Cluster slot, and where each stands in the call. */
export interface SlotGroup {
  /** The checks, in the call's order. */
  readonly checks: Check[];
  /** Index in the call of each check. */
  readonly at: number[];
}

/**
 * Splits the checks of one call by Cluster slot.
 *
 * @returns the groups in order of their first check, or `undefined` when every check shares one slot.
 * @throws SluiceError `ERR_INVALID_OPTION` for a policy name with braces, as the key layout does.
 */
export function slotGroups(layout: KeyLayout, checks: readonly Check[]): SlotGroup[] | undefined {
  const n = checks.length;
  if (n < 2) return undefined;
  const bySlot = new Map<number, SlotGroup>();
  for (let i = 0; i < n; i++) {
    const slot = clusterSlot(layout.key(checks[i].policy, checks[i].key));
    const group = bySlot.get(slot);
    if (group === undefined) bySlot.set(slot, { checks: [checks[i]], at: [i] });
    else {
      group.checks.push(checks[i]);
      group.at.push(i);
    }
  }
  return bySlot.size === 1 ? undefined : [...bySlot.values()];
}

/** Runs `call` on each group's checks at once; resolves when all did (a refund, a settlement, a reset). */
export function eachSlot(
  groups: readonly SlotGroup[],
  call: (checks: Check[]) => Promise<unknown>,
): Promise<void> {
  return Promise.all(groups.map((g) => call(g.checks))).then(() => undefined);
}

/**
 * Decides a call over several slots: every group at once, each all or nothing in its own script. When a group
 * denies (or fails), the groups that took tokens or concurrency slots give them back before the answer.
 *
 * @param decideGroup - decides one group's checks (in one slot) in the call's mode.
 * @param refundGroup - gives back `cost` to one group's checks.
 * @returns one decision over every check, outcomes in the call's order.
 */
export async function decideAcrossSlots(
  checks: readonly Check[],
  groups: readonly SlotGroup[],
  cost: number,
  mode: EvaluateMode,
  decideGroup: (checks: Check[]) => Promise<Decision>,
  refundGroup: (checks: Check[]) => Promise<void>,
): Promise<Decision> {
  const settled = await Promise.allSettled(groups.map((g) => decideGroup(g.checks)));
  let failure: PromiseRejectedResult | undefined;
  let allowed = true;
  for (const s of settled) {
    if (s.status === 'rejected') failure ??= s;
    else if (!s.value.allowed) allowed = false;
  }
  const parts = settled.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
  const given: boolean[] = groups.map(() => false);
  if ((!allowed || failure !== undefined) && mode !== 'peek') {
    const refunds: Promise<void>[] = [];
    parts.forEach((d, i) => {
      // A group admitted by the open failure mode took nothing.
      if (d === undefined || !d.allowed || d.reason === 'store_unavailable_open') return;
      given[i] = true;
      refunds.push(refundGroup(groups[i].checks));
    });
    await Promise.all(refunds);
  }
  if (failure !== undefined) throw failure.reason;
  return mergeDecisions(checks.length, groups, parts as Decision[], given, cost, mode, allowed);
}

/** One decision from the groups' decisions; a group given back shows its buckets as they are after the refund. */
function mergeDecisions(
  n: number,
  groups: readonly SlotGroup[],
  parts: readonly Decision[],
  given: readonly boolean[],
  cost: number,
  mode: EvaluateMode,
  allowed: boolean,
): Decision {
  const outcomes: PolicyOutcome[] = new Array(n);
  let delayMs = 0;
  let retryAfterSeconds = 0;
  let open = false;
  let unavailable = false;
  let exceeds = false;
  groups.forEach((g, i) => {
    const d = parts[i];
    if (d.delayMs > delayMs) delayMs = d.delayMs;
    if (!d.allowed && d.retryAfterSeconds > retryAfterSeconds) retryAfterSeconds = d.retryAfterSeconds;
    if (d.reason === 'store_unavailable_open') open = true;
    else if (d.reason === 'store_unavailable') unavailable = true;
    else if (d.reason === 'cost_exceeds_burst') exceeds = true;
    g.at.forEach((at, k) => {
      const o = d.outcomes[k];
      // A decide took exactly `cost` whole tokens from each policy that had them: its level before is exact.
      outcomes[at] =
        given[i] && mode === 'decide' && !o.limited
          ? { ...o, remaining: Math.min(o.policy.burst, o.remaining + cost) }
          : o;
    });
  });
  if (allowed) {
    const reason = open ? 'store_unavailable_open' : 'allowed';
    return { allowed, reason, cost, retryAfterSeconds: 0, delayMs, outcomes, violated: [] };
  }
  const violated = outcomes.filter((o) => o.limited && !o.policy.shadow);
  const reason = unavailable ? 'store_unavailable' : exceeds ? 'cost_exceeds_burst' : 'limited';
  return {
    allowed,
    reason,
    cost,
    retryAfterSeconds: Math.max(1, retryAfterSeconds),
    delayMs: 0,
    outcomes,
    violated,
  };
}
