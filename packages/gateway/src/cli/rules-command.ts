import { loadConfigOrThrow } from '../config/load-config.js';
import { renderAlertRules } from './alert-rules.js';

/** Where the command writes; the CLI's own output functions. */
export interface RulesCommandIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/**
 * `sluice rules --config FILE`: prints the shipped Prometheus alert rules rewritten for the metric prefix of FILE
 * (`metrics.prefix`, default `sluice`), so a white-label deployment gets rules that name its own series instead of
 * editing a copy of deploy/prometheus/rules/rate-limiting.yaml by hand.
 *
 * @param file - the configuration file; it is loaded and checked as `serve` would, so an invalid one is reported.
 * @param io - stdout and stderr.
 * @returns the exit code: 0 printed, 1 the file is unreadable or invalid, 2 no file given.
 */
export function rulesCommand(file: string | undefined, io: RulesCommandIo): number {
  if (file === undefined) {
    io.err('sluice: rules needs --config FILE\n');
    return 2;
  }
  let text: string;
  let enabled: boolean;
  try {
    const config = loadConfigOrThrow(file);
    text = renderAlertRules(config.metrics.prefix);
    enabled = config.metrics.enabled;
  } catch (e) {
    io.err(`sluice: ${(e as Error).message}\n`);
    return 1;
  }
  // Rules for a gateway that exports nothing would never fire; say so, but still print them (a later reload may
  // enable metrics, and the output is often piped straight into a file).
  if (!enabled)
    io.err(`sluice: metrics.enabled is false in ${file}: these rules find no series until it is true\n`);
  io.out(text);
  return 0;
}
