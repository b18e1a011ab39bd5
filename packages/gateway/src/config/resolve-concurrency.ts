import { durationMs } from './duration.js';
import { type Priority, resolvePriority } from './resolve-overload.js';
import type { SemanticIssue } from './semantic-issue.js';
import type { ConfigPath } from './violation.js';

type Raw = Readonly<Record<string, unknown>>;

/** The concurrency limit of a tier or endpoint rule: slots per client, and the Retry-After of a refusal. */
export interface ConcurrencyConfig {
  /** Requests of one client in flight at once. */
  readonly slots: number;
  /** `Retry-After` seconds of a refusal (`rateLimiting.concurrencyRetryAfter`, default 1). */
  readonly retryAfterSeconds: number;
}

/** Keys of an endpoint rule that describe a window, which a count of requests in flight does not have. */
const WINDOW_KEYS = ['limit', 'window', 'burst', 'refill', 'class', 'queue'];

/** The Retry-After seconds of `rateLimiting.concurrencyRetryAfter`: whole seconds of at least 1, default 1. */
function retryAfterOf(rl: Raw, issues: SemanticIssue[]): number {
  const raw = rl.concurrencyRetryAfter as number | string | undefined;
  if (raw === undefined) return 1;
  const ms = durationMs(raw);
  if (ms === undefined || ms < 1000 || ms % 1000 !== 0 || ms > 86_400_000) {
    // Every concurrency policy reads it (a tier's, each rule's): reported once, not once per policy.
    if (!issues.some((i) => i.path.length === 2 && i.path[1] === 'concurrencyRetryAfter'))
      issues.push({
        path: ['rateLimiting', 'concurrencyRetryAfter'],
        message: `must be whole seconds from 1s to 1d, got ${JSON.stringify(raw)}`,
      });
    return 1;
  }
  return ms / 1000;
}

/**
 * A tier's `concurrentRequests`, as the resolved tier holds it (`concurrency`, absent without one). An unlimited
 * tier is exempt from every limit, so a concurrency limit on it would never apply: refused.
 *
 * @param t - the tier as parsed.
 * @param root - the whole configuration as parsed (`rateLimiting.concurrencyRetryAfter`).
 * @param path - where the tier is.
 * @param issues - where issues are added.
 */
export function resolveTierConcurrency(
  t: Raw,
  root: Raw,
  path: ConfigPath,
  issues: SemanticIssue[],
): { readonly concurrency?: ConcurrencyConfig } {
  const slots = t.concurrentRequests as number | undefined;
  if (slots === undefined) return {};
  if (t.unlimited === true) {
    issues.push({
      path: [...path, 'concurrentRequests'],
      message:
        'an unlimited tier is exempt from every limit, concurrency included: remove concurrentRequests or unlimited',
    });
    return {};
  }
  return {
    concurrency: Object.freeze({ slots, retryAfterSeconds: retryAfterOf(root.rateLimiting as Raw, issues) }),
  };
}

/**
 * An endpoint rule's `concurrent`, as the resolved rule holds it (`concurrency`, absent without one). A rule
 * counts either requests per window or requests in flight: a window key beside `concurrent` is refused at its
 * key, with the way out.
 *
 * @param e - the endpoint rule as parsed.
 * @param root - the whole configuration as parsed (`rateLimiting.concurrencyRetryAfter`).
 * @param path - where the rule is.
 * @param issues - where issues are added.
 */
export function resolveRuleConcurrency(
  e: Raw,
  root: Raw,
  path: ConfigPath,
  issues: SemanticIssue[],
): { readonly concurrency?: ConcurrencyConfig } {
  const slots = e.concurrent as number | undefined;
  if (slots === undefined) return classConcurrency(e, root, issues);
  for (const k of WINDOW_KEYS) {
    if (e[k] !== undefined) {
      issues.push({
        path: [...path, k],
        message: `"${k}" cannot be combined with "concurrent": a count of requests in flight has no window; give the rate limit a rule of its own`,
        atKey: true,
      });
    }
  }
  return {
    concurrency: Object.freeze({ slots, retryAfterSeconds: retryAfterOf(root.rateLimiting as Raw, issues) }),
  };
}

/** The concurrency of the class an endpoint rule names (`ratelimit.<class>.concurrent`), if it counts in flight. */
function classConcurrency(
  e: Raw,
  root: Raw,
  issues: SemanticIssue[],
): { readonly concurrency?: ConcurrencyConfig } {
  if (typeof e.class !== 'string') return {};
  const c = (root.ratelimit as Record<string, Raw | undefined> | undefined)?.[e.class];
  const slots =
    c !== undefined && Object.hasOwn(root.ratelimit as object, e.class) ? c.concurrent : undefined;
  if (typeof slots !== 'number') return {};
  return {
    concurrency: Object.freeze({ slots, retryAfterSeconds: retryAfterOf(root.rateLimiting as Raw, issues) }),
  };
}

/**
 * What a tier holds of capacity: its concurrency limit and its load-shedding priority.
 *
 * @param t - the tier as parsed.
 * @param root - the whole configuration as parsed.
 * @param path - where the tier is.
 * @param issues - where issues are added.
 */
export function resolveTierCapacity(
  t: Raw,
  root: Raw,
  path: ConfigPath,
  issues: SemanticIssue[],
): { readonly concurrency?: ConcurrencyConfig; readonly priority?: Priority } {
  return { ...resolveTierConcurrency(t, root, path, issues), ...resolvePriority(t) };
}

/**
 * What an endpoint rule holds of capacity: its concurrency limit and its load-shedding priority.
 *
 * @param e - the endpoint rule as parsed.
 * @param root - the whole configuration as parsed.
 * @param path - where the rule is.
 * @param issues - where issues are added.
 */
export function resolveRuleCapacity(
  e: Raw,
  root: Raw,
  path: ConfigPath,
  issues: SemanticIssue[],
): { readonly concurrency?: ConcurrencyConfig; readonly priority?: Priority } {
  return { ...resolveRuleConcurrency(e, root, path, issues), ...resolvePriority(e) };
}
