import type { RefillOptions } from 'sluice';
import type { SectionIssue } from './decision-config.js';
import { durationMs } from './duration.js';
import type { ClassConfig } from './gateway-config.js';
import type { ConfigPath } from './violation.js';

/** An issue that may point at a key rather than its value (a key that must not be there). */
export interface RefillIssue extends SectionIssue {
  readonly atKey?: boolean;
}

/** A `refill` mapping as the schema guarantees it: a positive integer `tokens` and a duration `every`. */
interface RawRefill {
  readonly tokens?: number;
  readonly every?: number | string;
}

/** The rate keys of a `ratelimit.<class>` entry: `per_minute`, `refill` or both. */
interface RawClassRate {
  readonly per_minute?: number;
  readonly refill?: RawRefill;
}

/** The limit keys of an endpoint rule that `refill` replaces or that a class excludes. */
interface RawRuleRate {
  readonly class?: string;
  readonly refill?: RawRefill;
  readonly limit?: number;
  readonly window?: number | string;
  readonly burst?: number;
}

/**
 * Reads `refill: { tokens, every }`. `every` is a duration like a rule's `window` (`10`, `10s`, `1m`) and, like it,
 * whole seconds of at least 1s: the engine steps in whole seconds.
 *
 * @param raw - the schema-valid mapping, or `undefined`.
 * @param path - the path of the `refill` key, for issues.
 * @param issues - where a fractional or too short `every` is reported.
 * @returns the frozen refill in whole seconds, or `undefined` when absent or unusable.
 */
export function resolveRefill(
  raw: RawRefill | undefined,
  path: ConfigPath,
  issues: SectionIssue[],
): RefillOptions | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const ms = durationMs(raw.every);
  if (ms !== undefined && (ms < 1000 || ms % 1000 !== 0)) {
    issues.push({
      path: [...path, 'every'],
      message: `must be a whole number of seconds of at least 1s, got ${JSON.stringify(raw.every)}`,
    });
    return undefined;
  }
  if (typeof raw.tokens !== 'number' || ms === undefined) return undefined;
  return Object.freeze({ tokens: raw.tokens, every: ms / 1000 });
}

/**
 * The rate of a `ratelimit.<class>` entry: `per_minute` for a continuous refill, or `refill` for a stepped one,
 * whose average rate is then the class's `perMinute`. Both may be given only when they state the same rate, so a
 * reader of either key is never misled; neither is refused, because a class needs a rate.
 *
 * @param name - the class name.
 * @param raw - the class entry, schema-valid.
 * @param issues - where a missing or contradicting rate is reported.
 */
export function resolveClassRate(
  name: string,
  raw: RawClassRate,
  issues: SectionIssue[],
): { readonly perMinute: number; readonly refill?: RefillOptions } {
  const path = ['ratelimit', name];
  if (raw.refill === undefined) {
    if (raw.per_minute === undefined)
      issues.push({
        path,
        message: 'missing required key "per_minute" (or give "refill: { tokens, every }")',
      });
    return { perMinute: raw.per_minute ?? 0 };
  }
  const refill = resolveRefill(raw.refill, [...path, 'refill'], issues);
  if (refill === undefined) return { perMinute: raw.per_minute ?? 0 };
  const rate = (refill.tokens * 60) / refill.every;
  if (raw.per_minute !== undefined && raw.per_minute !== rate) {
    issues.push({
      path: [...path, 'per_minute'],
      message: `must equal refill.tokens x 60 / refill.every (${refill.tokens} x 60 / ${refill.every} = ${rate}) or be left out, got ${raw.per_minute}`,
    });
  }
  return { perMinute: rate, refill };
}

/**
 * The stepped refill of an endpoint rule, from its own `refill` (which replaces `limit` and `window`: combining
 * them is refused at each key) or from the class it names (a rule naming a class takes no `refill` of its own).
 * The result overrides the rule's continuous limits; an empty object leaves them as they are.
 *
 * @param raw - the endpoint rule, schema-valid.
 * @param path - the rule's path, `rateLimiting.endpoints[i]`.
 * @param classes - the resolved classes.
 * @param issues - where combinations and ranges are reported.
 */
export function resolveRuleRefill(
  raw: RawRuleRate,
  path: ConfigPath,
  classes: Readonly<Record<string, ClassConfig>>,
  issues: RefillIssue[],
): {
  readonly limit?: number;
  readonly windowSeconds?: number;
  readonly burst?: number;
  readonly refill?: RefillOptions;
} {
  if (raw.class !== undefined) {
    if (raw.refill !== undefined)
      issues.push({
        path: [...path, 'refill'],
        message: '"refill" cannot be combined with "class": the class sets the limits',
        atKey: true,
      });
    const refill = classes[raw.class]?.refill;
    return refill === undefined ? {} : { limit: refill.tokens, windowSeconds: refill.every, refill };
  }
  if (raw.refill === undefined) return {};
  for (const k of ['limit', 'window'] as const) {
    if (raw[k] !== undefined)
      issues.push({
        path: [...path, k],
        message: `"${k}" cannot be combined with "refill": refill sets the rate (tokens every seconds)`,
        atKey: true,
      });
  }
  const refill = resolveRefill(raw.refill, [...path, 'refill'], issues);
  if (refill === undefined) return {};
  const burst = raw.burst ?? refill.tokens;
  // Tokens are held in units of 1 / (every x 1000) token, exact below 2^53 (D-001), as for a rule's window.
  const max = Math.floor(Number.MAX_SAFE_INTEGER / (refill.every * 1000));
  if (burst > max)
    issues.push({
      path: [...path, raw.burst === undefined ? 'refill' : 'burst'],
      message: `must be at most ${max} for refill every ${refill.every} s (exact token arithmetic), got ${burst}`,
    });
  return { limit: refill.tokens, windowSeconds: refill.every, burst, refill };
}
