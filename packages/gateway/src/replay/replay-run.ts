import type { Verdict } from 'sluice/http';
import type { GatewayConfig } from '../config/gateway-config.js';
import { FormatChoice } from './format-choice.js';
import { type FieldMap, fieldMap } from './json-fields.js';
import { forEachLine, type LogBytes } from './line-source.js';
import type { LogEncoding } from './log-encoding.js';
import type { LogFormat } from './log-format.js';
import { type LineParser, LogRecord } from './log-record.js';
import { REPLAY_BATCH, ReplayEngine } from './replay-engine.js';
import { FlipTally } from './replay-flips.js';

/** Unknown lines shown by number, per log. */
export const UNKNOWN_SHOWN = 5;

/** One log to replay: its name in the report and how to open it. */
export interface ReplayLog {
  readonly name: string;
  readonly open: () => LogBytes;
}

/** What reading one log found. */
export interface LogStats {
  readonly name: string;
  /** The format its lines were read in (`undefined` when no format read one). */
  format: Exclude<LogFormat, 'auto'> | undefined;
  /**
   * With `auto`: the line the format was chosen from, when lines before it were read by no format (a first line
   * cut short). Absent when the first line that is not blank chose it.
   */
  formatLine?: number;
  lines: number;
  requests: number;
  blank: number;
  /** Lines of the format that are no request to admit (the gateway's start-up lines, its health answers). */
  skipped: number;
  unknown: number;
  /** The first unknown lines' numbers. */
  readonly unknownLines: number[];
  gzip: boolean;
  /** The encoding the log was decoded from, when it was not UTF-8. */
  encoding?: LogEncoding;
  error?: string;
}

/** A configuration to replay, with its name in the report. */
export interface NamedConfig {
  readonly name: string;
  readonly config: GatewayConfig;
}

/** Options of {@link runReplay}. */
export interface ReplayRunOptions {
  readonly config: NamedConfig;
  /** A second configuration decided on the same requests (`--against`). */
  readonly against?: NamedConfig;
  readonly logs: readonly ReplayLog[];
  /** Default `auto` (per log, from the first line a format reads). */
  readonly format?: LogFormat;
  /** Where the facts are in JSON logs; default the common names. */
  readonly fields?: FieldMap;
  /** Sees every request with its decision under `config` (a promise for one that waited in a queue). */
  readonly onDecision?: (r: LogRecord, v: Verdict | Promise<Verdict>) => void;
}

/** The engines after a replay, and what reading the logs found. */
export interface ReplayRun {
  readonly config: NamedConfig;
  readonly engine: ReplayEngine;
  readonly against?: {
    readonly config: NamedConfig;
    readonly engine: ReplayEngine;
    readonly flips: FlipTally;
  };
  readonly logs: readonly LogStats[];
}

/**
 * Replays logs, in the order given, through one configuration (and a second one with `against`), from empty
 * buckets, one request at a time at its line's time.
 *
 * @returns the engines (their counts) and the logs' statistics, once every queued request has settled.
 */
export async function runReplay(o: ReplayRunOptions): Promise<ReplayRun> {
  const fields = o.fields ?? fieldMap([]);
  const a = new ReplayEngine(o.config.config);
  const b = o.against === undefined ? undefined : new ReplayEngine(o.against.config);
  const flips = b === undefined ? undefined : new FlipTally(a.config.maxTrackedKeys);
  // Lines are decided in batches (D-G64): each is parsed into its own record, and a batch goes to the engines
  // when full, before an unknown line is counted (the report's first unknown lines stay in line order) and at
  // the end of each log.
  const batch = Array.from({ length: REPLAY_BATCH }, () => new LogRecord());
  const lines = new Int32Array(REPLAY_BATCH);
  const outA: (Verdict | Promise<Verdict> | undefined)[] = new Array(REPLAY_BATCH).fill(undefined);
  const outB: (Verdict | Promise<Verdict> | undefined)[] = new Array(REPLAY_BATCH).fill(undefined);
  const stats: LogStats[] = [];
  const onDecision = o.onDecision;
  for (const log of o.logs) {
    const s: LogStats = {
      name: log.name,
      format: o.format === undefined || o.format === 'auto' ? undefined : (o.format as LogStats['format']),
      lines: 0,
      requests: 0,
      blank: 0,
      skipped: 0,
      unknown: 0,
      unknownLines: [],
      gzip: false,
    };
    stats.push(s);
    // Until a line is read, lines go through the choice of the format; then straight to its parser.
    const choice = new FormatChoice(o.format ?? 'auto', fields);
    let parse: LineParser | undefined;
    let tried = 0;
    const countUnknown = (no: number) => {
      s.unknown++;
      if (s.unknownLines.length < UNKNOWN_SHOWN) s.unknownLines.push(no);
    };
    const name = log.name;
    let filled = 0;
    const decideBatch = () => {
      const n = filled;
      if (n === 0) return;
      filled = 0;
      a.admitBatch(batch, n, lines, name, outA);
      b?.admitBatch(batch, n, lines, name, outB);
      for (let i = 0; i < n; i++) {
        const da = outA[i];
        const db = b === undefined ? undefined : outB[i];
        outA[i] = undefined;
        outB[i] = undefined;
        // Admission refuses what no request could carry (a cost beyond the engine's range): the line is unknown.
        if (da === undefined || (b !== undefined && db === undefined)) {
          countUnknown(lines[i]);
          continue;
        }
        s.requests++;
        if (db !== undefined) {
          if (!(da instanceof Promise) && !(db instanceof Promise)) flips?.compare(da, db);
          else void Promise.all([da, db]).then(([x, y]) => flips?.compare(x, y));
        }
        onDecision?.(batch[i], da);
      }
    };
    const unknown = (no: number) => {
      decideBatch();
      countUnknown(no);
    };
    const auto = o.format === undefined || o.format === 'auto';
    let input: LogBytes;
    try {
      input = log.open();
    } catch (e) {
      s.error = (e as Error).message;
      continue;
    }
    const read = await forEachLine(input, (line, no) => {
      if (line === undefined) return unknown(no);
      if (line.length === 0 || (line.charCodeAt(0) <= 32 && line.trim() === '')) {
        s.blank++;
        return;
      }
      const rec = batch[filled];
      let got: boolean | 'skip';
      if (parse === undefined) {
        const c = choice.read(line, rec);
        tried++;
        if (c === undefined) {
          const guess = choice.giveUp();
          if (guess !== undefined) {
            s.format = guess.format;
            parse = guess.parse;
          }
          return unknown(no);
        }
        s.format = c.format;
        parse = c.parse;
        if (tried > 1 && auto) s.formatLine = no;
        got = c.got;
      } else {
        rec.clear();
        got = parse(line, rec);
      }
      if (got === false) return unknown(no);
      if (got === 'skip') {
        s.skipped++;
        return;
      }
      lines[filled++] = no;
      if (filled === REPLAY_BATCH) decideBatch();
    });
    decideBatch();
    s.lines = read.lines;
    s.gzip = read.gzip;
    if (read.encoding !== undefined) s.encoding = read.encoding;
    if (read.error !== undefined) s.error = read.error;
  }
  await a.finish();
  await b?.finish();
  // Comparisons of queued requests settle one microtask after their engines.
  await new Promise((r) => setImmediate(r));
  return {
    config: o.config,
    engine: a,
    ...(b === undefined || o.against === undefined
      ? {}
      : { against: { config: o.against, engine: b, flips: flips! } }),
    logs: stats,
  };
}
