import type { Violation } from '../config/violation.js';
import type { Logger } from './create-logger.js';

/**
 * Logs a configuration reload that was refused: each violation at `error` with its place in the file, then one
 * line saying the configuration in effect stays. Written by whoever read the file: a gateway, or the main thread
 * of `sluice serve --threads` once for every thread.
 *
 * @param logger - the logger of the gateway or of the main thread.
 * @param file - the configuration file.
 * @param violations - from a load result.
 */
export function logRejectedReload(logger: Logger, file: string, violations: readonly Violation[]): void {
  for (const v of violations) {
    logger.error(
      { file, path: v.path, line: v.line, column: v.column },
      `invalid configuration: ${v.message}`,
    );
  }
  logger.error(
    { file, violations: violations.length },
    'configuration reload rejected; keeping the current configuration',
  );
}
