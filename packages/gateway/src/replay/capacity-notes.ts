import type { ConfigReport } from './replay-report.js';

const n = (x: number) => x.toLocaleString('en-US');

/**
 * What a replay says of a configuration's capacity limits, as the terminal report's sentences (the HTML page, which
 * imports no gateway code, writes the same from the report's `capacity`): the concurrency limits it could not
 * replay (lines without a duration) and load shedding, which it never replays (it follows the upstream's live
 * latency, which no access log replays).
 *
 * @param c - one configuration's report.
 */
export function capacityNotes(c: ConfigReport): string[] {
  const out: string[] = [];
  const k = c.capacity?.concurrency;
  if (k !== undefined && k.withoutDuration > 0)
    out.push(
      `concurrency: not replayed for ${n(k.withoutDuration)} request${k.withoutDuration === 1 ? '' : 's'} whose line has no duration (their slots were given back at once, so the gateway limits more than this replay shows): log NGINX $request_time, Apache %D, Envoy %DURATION%, or name a JSON field with --field duration=NAME`,
    );
  if (k !== undefined && k.endedEarly > 0)
    out.push(
      `concurrency: ${n(k.endedEarly)} request${k.endedEarly === 1 ? '' : 's'} gave back their slots before their end, with more requests in flight at once than replay holds`,
    );
  if (c.capacity?.overload !== undefined)
    out.push(
      "load shedding (overload:): not replayed: it follows the upstream's live latency and load, which an access log does not replay, so a gateway over capacity refuses more than this replay shows",
    );
  return out;
}
