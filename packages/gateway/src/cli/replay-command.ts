import { statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { durationMs } from '../config/duration.js';
import { loadConfigOrThrow } from '../config/load-config.js';
import { redactUrls } from '../config/redact.js';
import { type FieldMap, fieldMap } from '../replay/json-fields.js';
import { openLog } from '../replay/line-source.js';
import { durationUnit } from '../replay/log-duration.js';
import { type LogFormat, logFormat } from '../replay/log-format.js';
import { noRequestHint } from '../replay/no-request-hint.js';
import { DEFAULT_REORDER_WINDOW_MS } from '../replay/reorder-window.js';
import { type ReplayReport, replayReport } from '../replay/replay-report.js';
import {
  type LogStats,
  type NamedConfig,
  type ReplayLog,
  type ReplayRun,
  runReplay,
} from '../replay/replay-run.js';
import { replayHtml } from '../replay/report-html.js';
import { printable, renderReplayText } from '../replay/report-text.js';
import { replayHelp } from './log-command-help.js';
import { type InputFile, outputFileProblem, writeFileWhole } from './output-file.js';
import { joinNegativeValues, unknownOptionMessage } from './usage-hints.js';

/** Where the log commands read and write. */
export interface LogCommandIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** What `-` reads; default the process's standard input. */
  readonly stdin?: Readable;
  /** The environment for `${NAME}` references in configuration files; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

const REPLAY_OPTIONS = {
  config: { type: 'string', short: 'c' },
  against: { type: 'string' },
  format: { type: 'string' },
  field: { type: 'string', multiple: true },
  json: { type: 'boolean' },
  html: { type: 'string' },
  'reorder-window': { type: 'string' },
  'duration-unit': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Usage of `sluice replay`, printed on a usage error and first in its help. */
export const REPLAY_USAGE =
  'Usage: sluice replay --config FILE [--against OTHER.yaml] [--format FORMAT] [--field NAME=PATH]... [--reorder-window DURATION] [--duration-unit UNIT] [--json] [--html FILE] LOG...\n';

/** A usage error: exit code 2 with this message. */
export class UsageError extends Error {}

/** The parts of a log command's arguments shared by replay and recommend. */
export interface LogArguments {
  readonly logs: readonly ReplayLog[];
  readonly format: LogFormat;
  readonly fields: FieldMap;
  /** `--reorder-window`, when given. */
  readonly reorderWindowMs?: number;
}

/** The longest `--reorder-window`: lines held that long cost memory and delay nothing a live gateway would see. */
const MAX_REORDER_WINDOW_MS = 3_600_000;

/**
 * Reads `--reorder-window`: how late a line may be and still be decided in time order.
 *
 * @returns milliseconds, or `undefined` when not given.
 * @throws UsageError naming the option, the expectation and the value.
 */
export function reorderWindowOption(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = value === '0' ? 0 : durationMs(value);
  if (ms === undefined || ms > MAX_REORDER_WINDOW_MS)
    throw new UsageError(
      `--reorder-window must be a duration from 0 to 1h (such as 60s or 2m; default ${DEFAULT_REORDER_WINDOW_MS / 1000}s, 0 decides lines as they come), got ${JSON.stringify(value)}`,
    );
  return ms;
}

/**
 * Checks the logs and the format options of a log command.
 *
 * @throws UsageError for no log, a log that cannot be read, or an invalid `--format` or `--field`.
 */
export function logArguments(
  positionals: readonly string[],
  format: string | undefined,
  fields: readonly string[] | undefined,
  io: LogCommandIo,
  reorderWindow?: string,
  unit?: string,
): LogArguments {
  const reorderWindowMs = reorderWindowOption(reorderWindow);
  if (positionals.length === 0)
    throw new UsageError('no LOG given (a file, a .gz file, or - for standard input)');
  const logs = positionals.map((name): ReplayLog => {
    if (name !== '-') {
      try {
        if (!statSync(name).isFile()) throw new Error('not a file');
      } catch (e) {
        throw new UsageError(`cannot read the log ${JSON.stringify(name)}: ${(e as Error).message}`);
      }
    }
    return name === '-'
      ? { name: 'stdin', open: () => openLog(name, io.stdin), readOnce: true }
      : { name, open: () => openLog(name, io.stdin) };
  });
  try {
    return {
      logs,
      format: logFormat(format),
      fields: fieldMap(fields ?? [], durationUnit(unit)),
      ...(reorderWindowMs === undefined ? {} : { reorderWindowMs }),
    };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/**
 * The files a log command reads, which its `--out` or `--html` file must not be: the logs, the configuration
 * files, and standard input when `-` reads the process's own (a shell's `< access.log`).
 *
 * @param positionals - the logs as given (`-` for standard input).
 * @param configs - `--config`, then `--against` (either may be absent).
 */
export function inputFiles(
  positionals: readonly string[],
  io: LogCommandIo,
  config?: string,
  against?: string,
): InputFile[] {
  const out: InputFile[] = [];
  for (const name of positionals) {
    if (name !== '-') out.push({ what: 'the log', path: name });
    else if (io.stdin === undefined) out.push({ what: 'the log read from standard input', fd: 0 });
  }
  if (config !== undefined) out.push({ what: 'the --config file', path: config });
  if (against !== undefined) out.push({ what: 'the --against file', path: against });
  return out;
}

/**
 * Parses a log command's arguments: the values and logs, or the exit code after printing help (0) or a usage
 * error (2), with the long option probably meant for a mistyped one.
 */
export function parseCommand<O extends Record<string, OptionSpec>>(
  name: string,
  argv: readonly string[],
  options: O,
  usage: string,
  io: LogCommandIo,
  help = usage,
): { values: ParsedValues<O>; positionals: string[] } | number {
  let parsed: { values: ParsedValues<O>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: joinNegativeValues(argv, options),
      allowPositionals: true,
      strict: true,
      options,
    }) as never;
  } catch (e) {
    io.err(
      `sluice ${name}: ${unknownOptionMessage(e, Object.keys(options)) ?? (e as Error).message}\n${usage}`,
    );
    return 2;
  }
  if ((parsed.values as { help?: boolean }).help === true) {
    io.out(help);
    return 0;
  }
  return parsed;
}

/** One option of a log command, as `parseArgs` takes it. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  readonly multiple?: boolean;
}

/** The values `parseArgs` gives for a set of options. */
export type ParsedValues<O extends Record<string, OptionSpec>> = {
  [K in keyof O]?: O[K] extends { type: 'boolean' }
    ? boolean
    : O[K] extends { multiple: true }
      ? string[]
      : string;
};

/**
 * Loads a configuration file as `serve` would; the error lists every violation with its place.
 *
 * @param file - the file.
 * @param env - the environment for its `${NAME}` references; default `process.env`.
 */
export function namedConfig(file: string, env?: LogCommandIo['env']): NamedConfig {
  return { name: file, config: loadConfigOrThrow(file, env === undefined ? {} : { env }) };
}

/**
 * Says on standard error which logs gave no request although they have lines (read in the wrong format), or
 * that the logs hold no request at all.
 *
 * @param command - `replay` or `recommend`, for the messages.
 * @param logs - what reading the logs found.
 * @param format - the `--format` value.
 * @returns true when something was said: the report does not cover what the user gave.
 */
export function reportNoRequests(
  command: string,
  logs: readonly LogStats[],
  format: LogFormat,
  io: LogCommandIo,
): boolean {
  let said = false;
  for (const l of logs) {
    const hint = noRequestHint(l, format);
    if (hint === undefined) continue;
    io.err(`sluice ${command}: ${hint}\n`);
    said = true;
  }
  if (!said && logs.every((l) => l.requests === 0)) {
    io.err(`sluice ${command}: the logs hold no request (no line that is not blank or a line to skip)\n`);
    said = true;
  }
  return said;
}

/**
 * `sluice replay`: runs access logs through a configuration's admission on the log's own time and reports what it
 * would have done (terminal, `--json`, `--html FILE`), optionally against a second configuration.
 *
 * @param argv - the arguments after `replay`.
 * @param io - output and standard input.
 * @returns the exit code: 0 reported, 1 a configuration or the HTML page could not be used, a log could not be
 *   read to its end (reported up to the break), or a log gave no request (no line read in its format), 2 a usage
 *   error (an `--html` file that cannot be written included, checked before the logs are read).
 */
export async function replayCommand(argv: readonly string[], io: LogCommandIo): Promise<number> {
  const parsed = parseCommand('replay', argv, REPLAY_OPTIONS, REPLAY_USAGE, io, replayHelp(REPLAY_USAGE));
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  let args: LogArguments;
  try {
    if (values.config === undefined) throw new UsageError('--config FILE is required');
    args = logArguments(
      positionals,
      values.format,
      values.field,
      io,
      values['reorder-window'],
      values['duration-unit'],
    );
    const html =
      values.html === undefined
        ? undefined
        : outputFileProblem(
            '--html',
            values.html,
            inputFiles(positionals, io, values.config, values.against),
          );
    if (html !== undefined) throw new UsageError(html);
  } catch (e) {
    io.err(`sluice replay: ${(e as Error).message}\n${REPLAY_USAGE}`);
    return 2;
  }
  let config: NamedConfig;
  let against: NamedConfig | undefined;
  try {
    config = namedConfig(values.config, io.env);
    if (values.against !== undefined) against = namedConfig(values.against, io.env);
  } catch (e) {
    io.err(`sluice replay: ${redactUrls((e as Error).message)}\n`);
    return 1;
  }
  let run: ReplayRun;
  let report: ReplayReport;
  try {
    run = await runReplay({ config, ...(against === undefined ? {} : { against }), ...args });
    report = replayReport(run);
  } catch (e) {
    // Whatever a log does to the replay, the user gets a message, not a stack trace.
    io.err(`sluice replay: ${redactUrls((e as Error).message)}\n`);
    return 1;
  }
  if (values.json === true) io.out(`${JSON.stringify(report, null, 2)}\n`);
  else io.out(renderReplayText(report));
  if (values.html !== undefined) {
    try {
      writeFileWhole(values.html, replayHtml(report));
    } catch (e) {
      io.err(`sluice replay: cannot write the HTML report: ${(e as Error).message}\n`);
      return 1;
    }
    io.err(`HTML report: ${values.html}\n`);
  }
  // A log cut short (a truncated or corrupt gzip file, a read error) is reported with the lines before the break,
  // but a script must be able to tell that the report does not cover the whole log.
  const broken = run.logs.filter((l) => l.error !== undefined);
  for (const l of broken)
    io.err(`sluice replay: ${printable(l.name)} was read only in part: ${printable(l.error ?? '')}\n`);
  // A report that counts nothing reads like a quiet hour: a log in the wrong format must fail a script too.
  const nothing = reportNoRequests('replay', run.logs, args.format, io);
  return broken.length > 0 || nothing ? 1 : 0;
}
