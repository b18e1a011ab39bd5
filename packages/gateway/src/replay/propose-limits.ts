import type { GatewayConfig } from '../config/gateway-config.js';
import type { ProposedLimit } from './proposed-limit.js';
import { type GroupDistribution, quantile, RATE_WINDOWS_MS } from './rate-distribution.js';

/**
 * The limit over window `w` for a group: the value at `level` of its per-client peaks (over clients with more than
 * one request), raised until the requests it would refuse are at most `spare` of the group's; at least 1.
 *
 * @param windows - how many of the window's length the logs span (at least 1).
 */
function at(g: GroupDistribution, w: 0 | 1 | 2, level: number, spare: number, windows: number): number {
  const peaks = g.sortedPeaks[w];
  const byShare = Math.ceil(quantile(peaks, level));
  return Math.max(1, byShare, requestBound(peaks, g.sortedRequests[w], spare * g.requests, windows));
}

/**
 * The smallest limit whose refusals are estimated at most `budget` requests. A client above a limit L of its
 * window is refused at least the part of its busiest window above L, and at least what it sent beyond L a window
 * over the whole span: the larger of the two is taken as its refusals (the confirming replay then counts them).
 *
 * @param peaks - per-client peaks, ascending; `requests` each client's requests in the same order.
 * @param windows - how many of the window's length the logs span (at least 1).
 * @returns 0 when no client needs a limit above its peak.
 */
export function requestBound(
  peaks: Float64Array,
  requests: Float64Array,
  budget: number,
  windows: number,
): number {
  const refused = (limit: number) => {
    let n = 0;
    for (let i = peaks.length - 1; i >= 0 && peaks[i] > limit; i--)
      n += Math.max(peaks[i] - limit, requests[i] - limit * windows);
    return n;
  };
  let lo = 0;
  let hi = peaks.length === 0 ? 0 : Math.ceil(peaks[peaks.length - 1]);
  // Refusals fall as the limit rises: the smallest limit within the budget, by bisection.
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (refused(mid) <= budget) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * The limits that would have limited at most the clients above `level` of each group's per-client peaks, and
 * refused (by estimate) at most `spare` of its requests: a tier's
 * per minute (its burst at least its busiest second) and per hour, a rule's limit over its window. A rule whose
 * limits come from a class or a stepped refill is reported with the reason and not changed.
 *
 * @param spanMs - the time the logs cover: a window longer than it was never seen whole, so a peak over it is a
 *   count over the span. A limit that must be set (a tier's per minute, a rule's) is then that count at the
 *   same pace over the whole window; a tier's per hour, which may be left out, is not proposed.
 */
export function proposeLimits(
  groups: readonly GroupDistribution[],
  config: GatewayConfig,
  withConfig: boolean,
  top: number,
  level: number,
  spanMs: number,
  spare: number,
): ProposedLimit[] {
  const seenMs = Math.max(spanMs, RATE_WINDOWS_MS[0]);
  const windows = (w: 0 | 1 | 2) => Math.max(1, seenMs / RATE_WINDOWS_MS[w]);
  const hourSeen = spanMs >= RATE_WINDOWS_MS[2];
  const byName = new Map(groups.map((g) => [g.group, g]));
  const out: ProposedLimit[] = [];
  const tierNames = withConfig
    ? Object.keys(config.tiers).filter((t) => !config.tiers[t].unlimited)
    : groups.filter((g) => g.group.startsWith('tier:')).map((g) => g.group.slice(5));
  for (const name of tierNames) {
    const g = byName.get(`tier:${name}`);
    // A tier nobody used, or no client more than once (no rate to measure), keeps its limits.
    if (g === undefined || g.sortedPeaks[1].length === 0) continue;
    const minuteMs = RATE_WINDOWS_MS[1];
    const short = seenMs < minuteMs;
    const perMinute = short
      ? Math.ceil((at(g, 1, level, spare, windows(1)) * minuteMs) / seenMs)
      : at(g, 1, level, spare, windows(1));
    const kept = withConfig ? (config.tiers[name].perHour ?? 0) : 0;
    out.push({
      kind: 'tier',
      name,
      policy: name,
      perMinute,
      burst: Math.max(perMinute, at(g, 0, level, spare, windows(0))),
      perHour: hourSeen ? Math.max(perMinute, at(g, 2, level, spare, windows(2))) : kept,
      windowSeconds: 60,
      ...(!hourSeen && kept > 0 ? { hourKept: true as const } : {}),
      ...(short ? { extrapolated: true as const } : {}),
    });
  }
  const rules = withConfig
    ? config.endpoints.map((r) => ({
        name: r.name,
        pattern: r.pattern,
        window: r.windowSeconds,
        index: r.index,
        kept: keptBecause(r),
      }))
    : groups
        .filter((g) => g.group.startsWith('rule:'))
        .slice(0, top)
        .map((g) => ({
          name: g.group.slice(5),
          pattern: g.group.slice(5),
          window: 60,
          index: undefined,
          kept: undefined,
        }));
  for (const r of rules) {
    const g = byName.get(`rule:${r.name}`);
    if (g === undefined) continue;
    if (g.sortedPeaks[0].length === 0) {
      // No client sent it more than one request: there is no rate to propose (a limit of 1 would refuse any
      // client's second request). A rule of the file keeps its numbers and says why; a template gets no rule.
      if (withConfig)
        out.push({
          kind: 'rule',
          name: r.pattern,
          policy: r.name,
          perMinute: 0,
          burst: 0,
          perHour: 0,
          windowSeconds: r.window,
          ...(r.index === undefined ? {} : { index: r.index }),
          kept: r.kept ?? 'no client sent it more than one request',
        });
      continue;
    }
    // The measured window closest to the rule's, scaled to it; a window longer than the logs was measured over
    // their span.
    const w = r.window <= 1 ? 0 : r.window <= 60 ? 1 : 2;
    const measuredMs = Math.min(RATE_WINDOWS_MS[w], seenMs);
    const limit = Math.max(1, Math.ceil((at(g, w, level, spare, windows(w)) * r.window * 1000) / measuredMs));
    const extrapolated = r.kept === undefined && r.window * 1000 > seenMs;
    out.push({
      kind: 'rule',
      name: r.pattern,
      policy: r.name,
      perMinute: limit,
      burst: limit,
      perHour: 0,
      windowSeconds: r.window,
      ...(r.index === undefined ? {} : { index: r.index }),
      ...(r.kept === undefined ? {} : { kept: r.kept }),
      ...(extrapolated ? { extrapolated: true as const } : {}),
    });
  }
  return out;
}

function keptBecause(r: GatewayConfig['endpoints'][number]): string | undefined {
  if (r.className !== undefined) return `its limits come from the class ${r.className}`;
  if (r.refill !== undefined) return 'it refills in steps';
  return undefined;
}
