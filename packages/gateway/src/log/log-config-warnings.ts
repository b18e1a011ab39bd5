import type { ConfigWarning } from '../config/config-warnings.js';
import type { Logger } from './create-logger.js';

/**
 * Logs configuration warnings at `warn`, one line each, with the fields of `sluice validate`'s output (`code`,
 * `path`, `line`, `column`, `suggestion`; no `line` and `column` for a value set in code rather than read from
 * the file), so a risky setting is seen where the gateway runs, not only where the file was checked.
 *
 * @param logger - the gateway's logger.
 * @param warnings - from `configWarnings(config)` or a load result's `warnings`.
 * @param file - the configuration file, when there is one.
 *
 * @example
 * ```ts
 * logConfigWarnings(gateway.logger, configWarnings(gateway.config), 'rate-limits.yaml');
 * ```
 */
export function logConfigWarnings(
  logger: Logger,
  warnings: readonly ConfigWarning[],
  file?: string | undefined,
): void {
  for (const w of warnings) {
    // Line 0 means the value came from no file (a configuration completed in code): no position to claim.
    const at = w.line > 0 ? { line: w.line, column: w.column } : {};
    logger.warn(
      { code: w.code, file, path: w.path, ...at, suggestion: w.suggestion },
      `configuration warning: ${w.message}`,
    );
  }
}
