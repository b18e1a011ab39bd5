import promClient from 'prom-client';
import type { OverrideControl } from '../admission/override-control.js';
import { Penalties } from '../admission/penalties.js';
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
  return new Penalties(control, config, now, logger, (b) => {
    blocks.inc({ status: String(b.status) });
    logger.warn(
      { penalty: true, key: b.key, durationSeconds: b.durationMs / 1000, level: b.level, status: b.status },
      'key blocked by penalty',
    );
  });
}
