/**
 * The pure steps every override store writes through (rules replaced and pruned, histories bounded and merged),
 * so that the memory, shared and Redis stores behave alike.
 */
import {
  AUTOMATIC_HISTORY_LIMIT,
  OVERRIDE_HISTORY_LIMIT,
  type OverrideChange,
  type OverrideRule,
} from './override.js';

/** The rules still in force at `nowMs` (for listings and for pruning on write). */
export function liveOverrides(rules: readonly OverrideRule[], nowMs: number): OverrideRule[] {
  return rules.filter((r) => r.expiresAt === undefined || r.expiresAt > nowMs);
}

/**
 * The rules after setting `rule`: any rule with the same id replaced, expired rules dropped. Every store writes
 * through here, so they prune alike.
 */
export function withOverride(
  rules: readonly OverrideRule[],
  rule: OverrideRule,
  nowMs: number,
): OverrideRule[] {
  const out = liveOverrides(rules, nowMs).filter((r) => r.id !== rule.id);
  out.push(rule);
  return out;
}

/** The history after appending a change, keeping the last {@link OVERRIDE_HISTORY_LIMIT}. */
export function withChange(history: readonly OverrideChange[], change: OverrideChange): OverrideChange[] {
  const out =
    history.length >= OVERRIDE_HISTORY_LIMIT
      ? history.slice(history.length - OVERRIDE_HISTORY_LIMIT + 1)
      : history.slice();
  out.push(change);
  return out;
}

/**
 * True when an automatic `rule` must leave `existing` (the rule of the same id, if any) in place: it is in force
 * at `nowMs` and another author set it. Every store decides through here, in the step that writes.
 */
export function keepsOverride(
  existing: OverrideRule | undefined,
  rule: OverrideRule,
  nowMs: number,
): boolean {
  return (
    existing !== undefined &&
    existing.author !== rule.author &&
    (existing.expiresAt === undefined || existing.expiresAt > nowMs)
  );
}

/** The automatic history after appending a change, keeping the last {@link AUTOMATIC_HISTORY_LIMIT}. */
export function withAutomaticChange(
  history: readonly OverrideChange[],
  change: OverrideChange,
): OverrideChange[] {
  const out = history.slice(Math.max(0, history.length - AUTOMATIC_HISTORY_LIMIT + 1));
  out.push(change);
  return out;
}

/** The operators' and the automatic changes as one history, oldest first (an operator's first at a tie). */
export function mergeHistories(
  operators: readonly OverrideChange[],
  automatic: readonly OverrideChange[],
): OverrideChange[] {
  if (automatic.length === 0) return operators.slice();
  const out: OverrideChange[] = [];
  let i = 0;
  let j = 0;
  while (i < operators.length || j < automatic.length) {
    if (j >= automatic.length || (i < operators.length && operators[i].at <= automatic[j].at))
      out.push(operators[i++]);
    else out.push(automatic[j++]);
  }
  return out;
}
