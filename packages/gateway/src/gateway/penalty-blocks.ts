import promClient from 'prom-client';
import type { OverrideControl } from '../admission/override-control.js';
import { MAX_PENALTY_BLOCKS, Penalties } from '../admission/penalties.js';
import type { PenaltyConfig } from '../config/gateway-config.js';
import type { Logger } from '../log/create-logger.js';

/**
 * The gateway's automatic blocks (`penalty:`), reported as they are set: a counter by answer status in the
 * gateway's registry (`<prefix>_penalty_blocks_total`) and one warning log line per block.
 *
 * @param control - where blocks are set, like an operator's.
 * @param config - the `penalty:` section in force (it follows reloads); idle while `undefined`.
 * @param now - epoch milliseconds.
 * @param logger - the gateway's logger.
 * @param metrics - the registry and the metric name prefix.
 * @returns the penalties, counting denials per key.
 */
export function penaltyBlocks(
  control: OverrideControl,
  config: () => PenaltyConfig | undefined,
  now: () => number,
  logger: Logger,
  metrics: { readonly registry: promClient.Registry; readonly prefix: string },
): Penalties {
  const blocks = new promClient.Counter({
    name: `${metrics.prefix}_penalty_blocks_total`,
    help: 'Automatic blocks set by penalty: (keys limited too often), by the status they answer with.',
    labelNames: ['status'],
    registers: [metrics.registry],
  });
  const skipped = new promClient.Counter({
    name: `${metrics.prefix}_penalty_blocks_skipped_total`,
    help: `Penalty blocks not set because ${MAX_PENALTY_BLOCKS} set by this gateway were in force (the keys stay limited by their buckets).`,
    registers: [metrics.registry],
  });
  let warnedAt = Number.NEGATIVE_INFINITY;
  return new Penalties(
    control,
    config,
    now,
    logger,
    (b) => {
      blocks.inc({ status: String(b.status) });
      // `doublings`, not `level`: the log line's own `level` is its severity.
      logger.warn(
        {
          penalty: true,
          key: b.key,
          durationSeconds: b.durationMs / 1000,
          doublings: b.level,
          status: b.status,
        },
        'key blocked by penalty',
      );
    },
    (key) => {
      skipped.inc();
      // One line a minute: the condition is a flood, and a line per key would be one too.
      const t = now();
      if (t - warnedAt < 60_000) return;
      warnedAt = t;
      logger.warn(
        { penalty: true, key, inForce: MAX_PENALTY_BLOCKS },
        'penalty block not set: this gateway has the most penalty blocks in force it keeps',
      );
    },
  );
}
