import type { Runtime } from '../admission/runtime.js';
import type { UnitsView } from './dashboard-frame.js';

/** What keeps the units charged per policy: the gateway's settle report. */
interface UnitTotals {
  totals(): readonly UnitsView[];
}

/** The other threads' units charged (`ThreadPeers` is one). */
export interface PeerUnits {
  /** `own` with every other thread's totals added, largest first. */
  units(own: readonly UnitsView[]): readonly UnitsView[];
}

/**
 * The units charged per policy since the gateway started, for the policies whose cost is settled from the
 * response (`cost:` or `count:`), largest first. `undefined` when the configuration settles nothing, so the panel
 * stays hidden.
 *
 * @param runtime - the configuration in effect, or `undefined` when the host has none to offer.
 * @param peers - as the first thread of `sluice serve --threads`, the other threads' units, summed in.
 */
export function unitsView(runtime: Runtime | undefined, peers?: PeerUnits): readonly UnitsView[] | undefined {
  if (runtime === undefined) return undefined;
  const c = runtime.config;
  const settles = [...Object.values(c.tiers), ...c.endpoints].some(
    (l) => l.cost !== undefined || l.count !== undefined,
  );
  if (!settles) return undefined;
  const report = runtime.events.settleMetrics as Partial<UnitTotals> | undefined;
  const own = typeof report?.totals === 'function' ? report.totals() : [];
  return peers === undefined ? own : peers.units(own);
}
