import type { SectionIssue } from './decision-config.js';
import type { QueueConfig } from './gateway-config.js';
import { timerMs } from './value-ranges.js';
import type { ConfigPath } from './violation.js';

/**
 * The `queue` and `problemCode` of a tier or endpoint rule, as the resolved configuration holds them. The schema
 * has checked the shapes (a positive `limit`, a duration `maxWait`, `order` only `fifo`); absent keys stay absent
 * so that configurations without queues resolve exactly as before.
 *
 * @param raw - the tier or endpoint rule as parsed.
 * @param path - where it is, for an issue about `queue.maxWait` (a timer: at most 2^31 - 1 ms).
 * @param issues - where issues are added.
 */
export function resolveQueue(
  raw: {
    readonly queue?: { readonly limit: number; readonly maxWait: number | string; readonly order?: 'fifo' };
    readonly problemCode?: string;
  },
  path: ConfigPath,
  issues: SectionIssue[],
): { readonly queue?: QueueConfig; readonly problemCode?: string } {
  const q = raw.queue;
  return {
    ...(q === undefined
      ? {}
      : {
          queue: Object.freeze({
            limit: q.limit,
            maxWaitMs: timerMs(q.maxWait, [...path, 'queue', 'maxWait'], issues) ?? 0,
            order: q.order ?? 'fifo',
          }),
        }),
    ...(raw.problemCode === undefined ? {} : { problemCode: raw.problemCode }),
  };
}
