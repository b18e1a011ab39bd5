import type { ProposedLimit } from './proposed-limit.js';
import { RATE_WINDOWS_MS } from './rate-distribution.js';

/**
 * The warnings of logs shorter than a window: the tiers that get no `requestsPerHour` (or keep the file's), and
 * the limits extrapolated from the clients' pace over the span.
 */
export function shortLogWarnings(
  proposals: readonly ProposedLimit[],
  withConfig: boolean,
  spanMs: number,
  first: Date,
  last: Date,
): string[] {
  const out: string[] = [];
  const span = duration(spanMs);
  const logs = `the logs span ${span} (${first.toISOString()} to ${last.toISOString()})`;
  const tiers = proposals.filter((p) => p.kind === 'tier');
  if (spanMs < RATE_WINDOWS_MS[2] && tiers.length > 0) {
    const kept = tiers.filter((p) => p.hourKept === true).map((p) => p.name);
    out.push(
      `${logs}, less than an hour: no requestsPerHour is proposed: the 1 h column counts at most ${span} of each client, and an hourly limit from it would limit the same traffic over a whole hour${
        withConfig
          ? kept.length > 0
            ? `; the requestsPerHour of ${kept.join(', ')} ${kept.length === 1 ? 'is' : 'are'} kept as the file has ${kept.length === 1 ? 'it' : 'them'} (raised only if ${kept.length === 1 ? 'it' : 'they'} limited in the logs)`
            : ''
          : ''
      }. Run sluice recommend on an hour of logs or more for one`,
    );
  }
  const extrapolated = proposals.filter((p) => p.extrapolated === true);
  const minute = extrapolated.filter((p) => p.windowSeconds === 60).map((p) => p.name);
  const longer = extrapolated.filter((p) => p.windowSeconds !== 60);
  const pace = `extrapolated from each client's pace over ${span} (its count times the window over the span), not measured`;
  if (minute.length > 0)
    out.push(
      `${logs}, less than a minute: the per-minute limits of ${minute.join(', ')} are ${pace}. Run sluice recommend on a longer log for measured ones`,
    );
  if (longer.length > 0)
    out.push(
      `${logs}, less than the window of ${longer.map((p) => `${p.name} (${duration(p.windowSeconds * 1000)})`).join(', ')}: ${longer.length === 1 ? 'its limit is' : 'their limits are'} ${pace}`,
    );
  return out;
}

/** A span for a sentence: seconds under a minute, minutes under an hour, then hours (to a tenth). */
function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Number((s / 60).toFixed(1))} min`;
  return `${Number((s / 3600).toFixed(1))} h`;
}
