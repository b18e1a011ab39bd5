import type { SectionIssue } from './decision-config.js';
import { durationMs } from './duration.js';
import type { ConfigPath } from './violation.js';

/*
 * The ranges `sluice serve` needs of the values it turns into timers, stores and headers. They are checked when
 * the file is validated, so `sluice validate`, a start and a reload refuse the same files with the same
 * file:line:column, and `serve` never meets a value its stores or Node.js would refuse or misread.
 */

/** The longest delay Node.js timers take (2^31 - 1 ms); a longer one fires at once with a TimeoutOverflowWarning. */
export const TIMER_MAX_MS = 2 ** 31 - 1;

/**
 * The most buckets `ratelimit.max_tracked_keys` may hold: the table `sluice serve --threads` shares between its
 * threads holds at most 2^26 keys. The one bound applies with and without threads, so that a file valid on one
 * machine is valid on any (the thread count defaults to the cores).
 */
export const MAX_TRACKED_KEYS = 2 ** 26;

/**
 * The most gateways `store.nodeCount` may name. The Redis store divides its local failure mode by
 * `nodeCount x threads` and takes at most 100,000; with at most {@link MAX_THREADS} threads a process stays inside.
 */
export const MAX_NODE_COUNT = 1000;

/** The most threads `sluice serve --threads` starts: with {@link MAX_NODE_COUNT}, the Redis store's 100,000. */
export const MAX_THREADS = 100;

/** The range of `store.timeout`: the Redis store waits 1 ms to 60 s for an answer before the failure mode. */
export const STORE_TIMEOUT_MS = { min: 1, max: 60_000 } as const;

/** The range of `store.leaseTime`: the Redis store's concurrency leases last 1 s to 1 h (its `leaseTimeMs`). */
export const STORE_LEASE_MS = { min: 1_000, max: 3_600_000 } as const;

/**
 * Reads a duration that must lie in `[min, max]` milliseconds after rounding, reporting one issue with the
 * given value otherwise.
 *
 * @param value - the schema-valid duration (seconds or a string such as `500ms`), or `undefined`.
 * @param path - where it is in the file.
 * @param range - inclusive bounds in milliseconds and, for `max`, why (shown in the message).
 * @param issues - where an issue is added.
 * @returns the milliseconds, or `undefined` when absent or out of range (the caller's default then applies).
 */
export function durationIn(
  value: number | string | undefined,
  path: ConfigPath,
  range: { readonly min?: number; readonly max: number },
  issues: SectionIssue[],
): number | undefined {
  const ms = durationMs(value);
  if (ms === undefined) return undefined;
  const min = range.min ?? 0;
  if (ms >= min && ms <= range.max) return ms;
  const given = JSON.stringify(value);
  issues.push({
    path,
    message:
      range.max === TIMER_MAX_MS && min === 0
        ? `must be at most ${TIMER_MAX_MS}ms (the longest timer Node.js sets), got ${given}`
        : `must be between ${show(min)} and ${show(range.max)}, got ${given}`,
  });
  return undefined;
}

/** A timer's duration: 0 to {@link TIMER_MAX_MS}. See {@link durationIn}. */
export function timerMs(
  value: number | string | undefined,
  path: ConfigPath,
  issues: SectionIssue[],
): number | undefined {
  return durationIn(value, path, { max: TIMER_MAX_MS }, issues);
}

function show(ms: number): string {
  return ms % 1000 === 0 && ms > 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/**
 * Checks that an address the gateway connects to parses as an absolute URL with a host, as `new URL` (undici,
 * ioredis, the JWKS fetch, the quota webhook) reads it at start. The schema checks the scheme only.
 *
 * @param value - the schema-valid string, or `undefined` when absent.
 * @param path - where it is in the file.
 * @param issues - where an issue is added.
 */
export function checkUrl(value: string | undefined, path: ConfigPath, issues: SectionIssue[]): void {
  if (value === undefined) return;
  let host = '';
  try {
    host = new URL(value).hostname;
  } catch {
    // Reported below with the value.
  }
  if (host === '') {
    issues.push({
      path,
      message: `must be an absolute URL with a host, such as http://127.0.0.1:3000, got ${JSON.stringify(value)}`,
    });
  }
}
