import { LOG_FORMATS, type LogFormat } from './log-format.js';
import type { LogStats } from './replay-run.js';
import { printable } from './report-text.js';

const FORMATS = LOG_FORMATS.filter((f) => f !== 'auto');

/**
 * Why a log gave no request although it has lines no format read, and what to do: the format tried and the
 * options that name the right one. A report of such a log counts nothing, which reads like a quiet hour.
 *
 * @param l - what reading the log found.
 * @param given - the `--format` value the log was read with.
 * @returns the hint, or `undefined` when the log gave a request or has no unknown line.
 */
export function noRequestHint(l: LogStats, given: LogFormat): string | undefined {
  if (l.requests > 0 || l.unknown === 0) return undefined;
  const name = printable(l.name);
  const what =
    l.format === undefined
      ? `no line of ${name} was read as a request: no format (${FORMATS.join(', ')}) reads any of its ${l.unknown.toLocaleString('en-US')} unknown line${l.unknown === 1 ? '' : 's'}`
      : `no line of ${name} was read as a request in the format ${l.format}${given === 'auto' ? ' (guessed from its first line)' : ` (--format ${given})`}, ${l.unknown.toLocaleString('en-US')} unknown line${l.unknown === 1 ? '' : 's'}`;
  return `${what}: name the log's format with --format (${FORMATS.join(', ')}) and, for a JSON log, where its facts are with --field NAME=PATH (such as --field time=ts --field path=uri --field client=remote_addr)`;
}
