import type { Clock } from 'sluice';
import { TopLimitedKeys } from 'sluice/quota';
import { sharedTimeClock } from 'sluice/shared';
import type { Runtime } from '../admission/runtime.js';
import {
  capacityView,
  type LimitedKeysView,
  RateWindow,
  type ThreadFeed,
  ThreadPeers,
  TOP_SHIPPED,
  unitsView,
} from '../dashboard/index.js';
import { LimitedKeyFacts } from '../dashboard/limited-key-facts.js';
import type { GatewayThread } from './thread-messages.js';

/** Seconds the first thread's dashboard holds back, so that every thread's counts of a second are in. */
const FEED_SETTLE_SECONDS = 2;

/**
 * What a gateway gathers from its decisions for the dashboard: the per-second counts, the keys denied most often
 * and what each of them is, and, as the first thread of `sluice serve --threads`, the other threads' data merged
 * in. The gateway's metrics sink feeds `rates`, `limitedKeys` and `limitedKeyFacts`.
 */
export interface DashboardData {
  /** Per-second counts of the last minutes of decisions. */
  readonly rates: RateWindow;
  /** This thread's keys denied most often. */
  readonly limitedKeys: TopLimitedKeys;
  /** The first thread of several: the other threads' dashboard data, merged into this one's. */
  readonly peers: ThreadPeers | undefined;
  /** The keys denied most often as the dashboard shows them: over every thread, as the first thread of several. */
  readonly topLimitedKeys: LimitedKeysView;
  /** What each limited key is (this thread's denials). */
  readonly limitedKeyFacts: LimitedKeyFacts;
}

/**
 * Builds a gateway's dashboard data.
 *
 * @param thread - the thread of `sluice serve --threads` the gateway is, if any.
 * @param clock - the gateway's clock when it is given one (tests), else the system's.
 * @param keysPrefix - `keys.prefix` of the configuration, which a limited key's facts leave out.
 * @param now - the wall clock in epoch milliseconds.
 */
export function dashboardData(
  thread: GatewayThread | undefined,
  clock: Clock | undefined,
  keysPrefix: string,
  now: () => number,
): DashboardData {
  const clocked = clock === undefined ? {} : { clock };
  // Threads count their seconds on one clock, so that the first thread can add the others' seconds to its own.
  const rates = new RateWindow(
    thread === undefined
      ? clocked
      : {
          clock: sharedTimeClock,
          wallNow: () => sharedTimeClock.now(),
          settleSeconds: thread.collectsFeeds ? FEED_SETTLE_SECONDS : 0,
        },
  );
  // The last five to ten minutes (the current and the previous period), like the dashboard's chart.
  const limitedKeys = new TopLimitedKeys({
    periodMs: 300_000,
    ...clocked,
    ...(thread?.hashSecret === undefined ? {} : { hashSecret: thread.hashSecret }),
  });
  const peers = thread?.collectsFeeds ? new ThreadPeers(rates) : undefined;
  return {
    rates,
    limitedKeys,
    peers,
    topLimitedKeys: peers?.topKeys(limitedKeys) ?? limitedKeys,
    limitedKeyFacts: new LimitedKeyFacts((k) => limitedKeys.hashKey(k), keysPrefix, now),
  };
}

/**
 * A thread's dashboard data for the first thread: what is new since the previous feed.
 *
 * @param data - the thread's dashboard data.
 * @param inflight - the requests this thread serves now.
 * @param runtime - the configuration in effect, whose concurrency and units figures go along.
 */
export function threadFeed(data: DashboardData, inflight: number, runtime: Runtime): ThreadFeed {
  const top = data.limitedKeys.top(TOP_SHIPPED);
  return {
    rates: data.rates.ship(),
    top,
    inflight,
    facts: data.limitedKeyFacts.shipped(top),
    // This thread's own figures (no peers of its own): the first thread adds them to its dashboard's.
    concurrency: capacityView(runtime)?.concurrency,
    units: unitsView(runtime),
  };
}
