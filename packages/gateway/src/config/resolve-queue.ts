import { durationMs } from './duration.js';
import type { QueueConfig } from './gateway-config.js';

/**
 * The `queue` and `problemCode` of a tier or endpoint rule, as the resolved configuration holds them. The schema
 * has checked the shapes (a positive `limit`, a duration `maxWait`, `order` only `fifo`); absent keys stay absent
 * so that configurations without queues resolve exactly as before.
 *
 * @param raw - the tier or endpoint rule as parsed.
 */
export function resolveQueue(raw: {
  readonly queue?: { readonly limit: number; readonly maxWait: number | string; readonly order?: 'fifo' };
  readonly problemCode?: string;
}): { readonly queue?: QueueConfig; readonly problemCode?: string } {
  const q = raw.queue;
  return {
    ...(q === undefined
      ? {}
      : {
          queue: Object.freeze({
            limit: q.limit,
            maxWaitMs: durationMs(q.maxWait) ?? 0,
            order: q.order ?? 'fifo',
          }),
        }),
    ...(raw.problemCode === undefined ? {} : { problemCode: raw.problemCode }),
  };
}
