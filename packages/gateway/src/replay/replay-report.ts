import type { MemoryStore } from 'sluice/memory';
import type { FlipCounts } from './replay-flips.js';
import type { ReplayHolds } from './replay-holds.js';
import type { OutcomeCounts } from './replay-outcome.js';
import type { LogStats, NamedConfig, ReplayRun } from './replay-run.js';
import { type CostsReport, costsReport, type ReplaySettlement } from './replay-settle.js';
import type { ReplayTally } from './replay-tally.js';

/** How many limited keys and flipping keys the report lists. */
export const TOP_KEYS = 10;

/** A row of the per-policy table. */
export interface PolicyRow extends OutcomeCounts {
  readonly policy: string;
  /** Requests this policy itself refused. */
  readonly limitedHere: number;
  /** Requests a shadow policy would have refused. */
  readonly wouldLimit: number;
}

/** One minute of the log. */
export interface MinuteReport extends OutcomeCounts {
  /** ISO time of the minute's start (UTC). */
  readonly minute: string;
}

/** The counts of one configuration over the logs. */
export interface ConfigReport {
  readonly config: string;
  readonly totals: OutcomeCounts;
  readonly tiers: readonly ({ readonly tier: string } & OutcomeCounts)[];
  readonly policies: readonly PolicyRow[];
  readonly limitedKeys: readonly {
    readonly key: string;
    readonly count: number;
    readonly first: string;
    readonly last: string;
    readonly maxRetryAfter: number;
    readonly policies: readonly string[];
  }[];
  /** Distinct keys limited at least once (those beyond the key cap not included). */
  readonly limitedKeyCount: number;
  readonly firstLimited: readonly {
    readonly log: string;
    readonly line: number;
    readonly time: string;
    readonly key: string;
    readonly policies: readonly string[];
    readonly retryAfter: number;
  }[];
  readonly busiestMinute: MinuteReport | undefined;
  /** Per minute: Unix seconds, then [allowed, limited, queued, exempt, refused] and per policy [allowed, limited, queued]. */
  readonly timeline: {
    readonly policies: readonly string[];
    readonly minutes: readonly (readonly number[])[];
  };
  readonly store: {
    readonly maxTrackedKeys: number;
    readonly evictions: number;
    readonly trackedKeys: number;
  };
  /**
   * The configuration's `penalty:` section (automatic blocks of keys limited too often), which replay does not
   * apply: a live gateway also refuses the blocked keys' requests. Absent without the section.
   */
  readonly penalty?: PenaltyReport;
  /**
   * The configuration's capacity limits as replayed: its concurrency limits (slots held for each line's duration;
   * `replayed` false when lines of a concurrency rule had no duration) and its `overload:` section (load shedding,
   * never replayed). Absent when the configuration has neither.
   */
  readonly capacity?: CapacityReport;
  /**
   * The configuration's costs settled from the response (`cost:`, `count:`) as replayed from each line's status,
   * size and cost field; `replayed` false when lines lacked what their settlement needed. Absent without them.
   */
  readonly costs?: CostsReport;
}

/** What a replay did with a configuration's concurrency limits and load shedding. */
export interface CapacityReport {
  readonly concurrency?: {
    /** False when requests of a concurrency rule had no duration in their line. */
    readonly replayed: boolean;
    /** Requests that held their slots for their logged duration. */
    readonly held: number;
    /** Requests of a concurrency rule without a duration: their slots came back at once. */
    readonly withoutDuration: number;
    /** Requests whose slots came back early, with more in flight at once than replay holds. */
    readonly endedEarly: number;
  };
  readonly overload?: { readonly replayed: false };
}

/** A `penalty:` section as the report names it: not replayed, durations in seconds. */
export interface PenaltyReport {
  readonly replayed: false;
  readonly after: number;
  readonly withinSeconds: number;
  readonly blockSeconds: number;
  readonly maxBlockSeconds: number;
  readonly status: 403 | 429;
}

/** The report of `sluice replay`, as `--json` prints it. */
export interface ReplayReport extends ConfigReport {
  readonly logs: readonly LogStats[];
  /** First and last request time (ISO, UTC) and the span in seconds. */
  readonly span: { readonly from: string; readonly to: string; readonly seconds: number } | undefined;
  /**
   * Lines out of time order: `reordered` were put back in order within the reorder window of `windowSeconds`;
   * `lines` were earlier than a line already decided (beyond the window) and decided at the later time, at most
   * `maxSeconds` earlier than a line before them; `early` were decided before their window passed (a log busier
   * than the window holds).
   */
  readonly outOfOrder: {
    readonly lines: number;
    readonly maxSeconds: number;
    readonly windowSeconds: number;
    readonly reordered: number;
    readonly early: number;
  };
  /**
   * Requests whose client is no IP address (a host name): decided without a client address, so they share the
   * key `ip:unknown`; `example` is the first such client as logged.
   */
  readonly clientsNotIp: { readonly lines: number; readonly example?: string };
  /**
   * Requests without a client address and without a caller identity (Envoy's default format at an edge Envoy
   * logs X-Forwarded-For as `-`): decided as one client, the key `ip:unknown`.
   */
  readonly clientsMissing: { readonly lines: number };
  readonly against?: ConfigReport & {
    readonly flips: FlipCounts & {
      readonly policies: readonly ({ readonly policy: string } & FlipCounts)[];
      readonly keys: readonly ({ readonly key: string } & FlipCounts)[];
    };
  };
}

/**
 * ISO time of a replayed time. The parsers read no time a Date cannot hold (log-time.ts); should one reach the
 * report anyway, it is shown as its number rather than ending the report with a RangeError.
 */
export function iso(ms: number): string {
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : String(ms);
}

/**
 * Builds the report of a replay.
 *
 * @param run - the finished replay.
 * @returns a plain, JSON-ready object.
 */
export function replayReport(run: ReplayRun): ReplayReport {
  const e = run.engine;
  const base = configReport(run.config, e.tally, e.store, e.holds, e.settlement);
  const span = Number.isNaN(e.firstMs)
    ? undefined
    : { from: iso(e.firstMs), to: iso(e.lastMs), seconds: (e.lastMs - e.firstMs) / 1000 };
  const report: ReplayReport = {
    ...base,
    logs: run.logs,
    span,
    outOfOrder: {
      lines: run.order.late,
      maxSeconds: run.order.maxLateSeconds,
      windowSeconds: run.order.windowSeconds,
      reordered: run.order.reordered,
      early: run.order.early,
    },
    clientsNotIp:
      e.clientNotIpExample === undefined
        ? { lines: e.clientsNotIp }
        : { lines: e.clientsNotIp, example: e.clientNotIpExample },
    clientsMissing: { lines: e.clientsMissing },
  };
  const x = run.against;
  if (x === undefined) return report;
  const f = x.flips;
  const byFlips = (p: FlipCounts, q: FlipCounts) => q.toLimited + q.toAllowed - (p.toLimited + p.toAllowed);
  return {
    ...report,
    against: {
      ...configReport(x.config, x.engine.tally, x.engine.store, x.engine.holds, x.engine.settlement),
      flips: {
        ...f.totals,
        policies: [...f.policies].map(([policy, c]) => ({ policy, ...c })).sort(byFlips),
        keys: [...f.keys]
          .map(([key, c]) => ({ key, ...c }))
          .sort(byFlips)
          .slice(0, TOP_KEYS),
      },
    },
  };
}

function configReport(
  named: NamedConfig,
  t: ReplayTally,
  store: MemoryStore,
  holds: ReplayHolds,
  settlement?: ReplaySettlement,
): ConfigReport {
  const name = named.name;
  const p = named.config.penalty;
  const minutes = [...t.minutes].sort((a, b) => a[0] - b[0]);
  let busiest: MinuteReport | undefined;
  for (const [m, row] of minutes) {
    const requests = row[0] + row[1] + row[2] + row[3] + row[4];
    if (busiest === undefined || requests > busiest.requests)
      busiest = {
        minute: iso(m * 60_000),
        requests,
        allowed: row[0],
        limited: row[1],
        queued: row[2],
        exempt: row[3],
        refused: row[4],
      };
  }
  const width = 5 + t.policies.length * 3;
  const stats = store.stats();
  return {
    config: name,
    totals: { ...t.totals },
    tiers: [...t.tiers].map(([tier, c]) => ({ tier, ...c })).sort((a, b) => b.requests - a.requests),
    policies: t.policies.map((p) => ({ ...p })),
    limitedKeys: [...t.limitedKeys.values()]
      .sort((a, b) => b.count - a.count || a.firstMs - b.firstMs)
      .slice(0, TOP_KEYS)
      .map((k) => ({
        key: k.key,
        count: k.count,
        first: iso(k.firstMs),
        last: iso(k.lastMs),
        maxRetryAfter: k.maxRetryAfter,
        policies: [...k.policies],
      })),
    limitedKeyCount: t.limitedKeys.size,
    firstLimited: t.firstLimited.map((s) => ({
      log: s.log,
      line: s.line,
      time: iso(s.timeMs),
      key: s.key,
      policies: s.policies,
      retryAfter: s.retryAfter,
    })),
    busiestMinute: busiest,
    timeline: {
      policies: t.policies.map((p) => p.policy),
      minutes: minutes.map(([m, row]) => {
        const out = [m * 60, ...row];
        while (out.length < width + 1) out.push(0);
        return out;
      }),
    },
    store: {
      maxTrackedKeys: stats.maxTrackedKeys,
      evictions: stats.evictions,
      trackedKeys: stats.trackedKeys,
    },
    ...(p === undefined
      ? {}
      : {
          penalty: {
            replayed: false,
            after: p.after,
            withinSeconds: p.withinMs / 1000,
            blockSeconds: p.blockMs / 1000,
            maxBlockSeconds: p.maxBlockMs / 1000,
            status: p.status,
          },
        }),
    ...capacityReport(named, holds),
    ...costsReport(settlement),
  };
}

/** The `capacity` entry of a configuration's report: nothing without concurrency limits or `overload:`. */
function capacityReport(named: NamedConfig, h: ReplayHolds): { capacity?: CapacityReport } {
  const overload = named.config.overload !== undefined;
  if (!h.active && !overload) return {};
  return {
    capacity: {
      ...(h.active
        ? {
            concurrency: {
              replayed: h.withoutDuration === 0,
              held: h.held,
              withoutDuration: h.withoutDuration,
              endedEarly: h.endedEarly,
            },
          }
        : {}),
      ...(overload ? { overload: { replayed: false } } : {}),
    },
  };
}
