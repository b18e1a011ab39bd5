import { durationMs } from './duration.js';
import type { SemanticIssue } from './semantic-issue.js';

/** How much a request matters when the upstream is over capacity: `priority` of tiers and endpoint rules. */
export type Priority = 'critical' | 'normal' | 'sheddable';

/** The parameters of an adaptive limit: `overload.adaptive` of the configuration. */
export interface AdaptiveLimitOptions {
  /** The lowest the limit goes, however slow the upstream; also the concurrency the baseline is measured at. */
  readonly min: number;
  /** The highest the limit goes, however fast the upstream stays. */
  readonly max: number;
  /** The limit before any latency is known. */
  readonly initial: number;
  /** How far one sample moves the limit, in (0, 1]. */
  readonly smoothing: number;
  /** How much slower than the baseline latency may get before the limit shrinks (>= 1). */
  readonly tolerance: number;
}

/** Default parameters; see docs/guide/capacity.md for why each. */
export const ADAPTIVE_DEFAULTS: AdaptiveLimitOptions = Object.freeze({
  min: 5,
  max: 1000,
  initial: 20,
  smoothing: 0.2,
  tolerance: 1.1,
});

/** The settings of a load shedder: the `overload:` section. */
export interface ShedderSettings {
  /** A fixed limit of requests in flight toward the upstream; `undefined` with `adaptive`. */
  readonly maxInFlight: number | undefined;
  /** The adaptive limit's parameters; `undefined` with `maxInFlight`. */
  readonly adaptive: AdaptiveLimitOptions | undefined;
  /** The share of the limit kept for `critical` requests, in [0, 1). */
  readonly reserve: number;
}

/** The `overload:` section, resolved. */
export interface OverloadConfig extends ShedderSettings {
  /** The base of a shed request's `Retry-After`, in whole seconds (jitter adds up to as much again). */
  readonly retryAfterSeconds: number;
}

type Raw = Readonly<Record<string, unknown>>;

/**
 * Resolves the `overload:` section: a fixed `maxInFlight` or an `adaptive` limit (one of the two), its reserve for
 * critical requests and the Retry-After of a refusal. The schema has checked the shapes (positive limits, a
 * reserve below 1, known keys); the issues here are those across keys.
 *
 * @param raw - the section as parsed, or `undefined` when absent (no load shedding).
 * @param issues - where issues are added.
 */
export function resolveOverload(raw: Raw | undefined, issues: SemanticIssue[]): OverloadConfig | undefined {
  if (raw === undefined) return undefined;
  const path = ['overload'];
  const fixed = raw.maxInFlight as number | undefined;
  const a = raw.adaptive as Raw | undefined;
  if (fixed !== undefined && a !== undefined) {
    issues.push({
      path: [...path, 'adaptive'],
      message: 'a limit is either fixed (maxInFlight) or adaptive: remove one of them',
      atKey: true,
    });
  }
  if (fixed === undefined && a === undefined) {
    issues.push({
      path,
      message: 'missing a limit: set maxInFlight (fixed) or adaptive: {} (learned from latency)',
    });
  }
  let adaptive: ShedderSettings['adaptive'];
  if (a !== undefined && fixed === undefined) {
    const d = ADAPTIVE_DEFAULTS;
    const min = (a.min as number | undefined) ?? Math.min(d.min, (a.max as number | undefined) ?? d.min);
    const max = (a.max as number | undefined) ?? Math.max(d.max, min);
    if (min > max) {
      issues.push({
        path: [...path, 'adaptive', 'min'],
        message: `min (${min}) must not be above max (${max})`,
      });
    }
    const initial = (a.initial as number | undefined) ?? Math.min(max, Math.max(min, d.initial));
    if (min <= max && (initial < min || initial > max)) {
      issues.push({
        path: [...path, 'adaptive', 'initial'],
        message: `initial (${initial}) must lie within min (${min}) and max (${max})`,
      });
    }
    adaptive = Object.freeze({
      min,
      max,
      initial,
      smoothing: (a.smoothing as number | undefined) ?? d.smoothing,
      tolerance: (a.tolerance as number | undefined) ?? d.tolerance,
    });
  }
  let retryAfterSeconds = 1;
  if (raw.retryAfter !== undefined) {
    const ms = durationMs(raw.retryAfter as number | string);
    if (ms === undefined || ms < 1000 || ms % 1000 !== 0 || ms > 3_600_000) {
      issues.push({
        path: [...path, 'retryAfter'],
        message: `must be whole seconds from 1s to 1h, got ${JSON.stringify(raw.retryAfter)}`,
      });
    } else retryAfterSeconds = ms / 1000;
  }
  return Object.freeze({
    maxInFlight: fixed,
    adaptive,
    reserve: (raw.reserve as number | undefined) ?? 0.2,
    retryAfterSeconds,
  });
}

/** The `priority` of a tier or endpoint rule, absent when not set (a rule then takes its tier's). */
export function resolvePriority(raw: Raw): { readonly priority?: Priority } {
  return raw.priority === undefined ? {} : { priority: raw.priority as Priority };
}
