import type { Verdict } from 'sluice/http';
import type { GatewayConfig } from '../config/gateway-config.js';
import { type FieldMap, fieldMap } from './json-fields.js';
import { forEachLine, type LineSourceResult, type LogBytes, MAX_LINE_CHARS } from './line-source.js';
import type { LogFormat } from './log-format.js';
import { LogLineReader, type LogStats } from './log-line-reader.js';
import type { LogRecord } from './log-record.js';
import { RecordRing } from './record-ring.js';
import { DEFAULT_REORDER_WINDOW_MS, ReorderWindow } from './reorder-window.js';
import { REPLAY_BATCH, ReplayEngine } from './replay-engine.js';
import { FlipTally } from './replay-flips.js';

export { type LogStats, UNKNOWN_SHOWN } from './log-line-reader.js';

/** One log to replay: its name in the report and how to open it. */
export interface ReplayLog {
  readonly name: string;
  readonly open: () => LogBytes;
  /** True when the log can be read only once (standard input): it is never read again from its start. */
  readonly readOnce?: boolean;
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
  /**
   * How late a line may be (earlier than lines before it) and still be decided in time order; default
   * {@link DEFAULT_REORDER_WINDOW_MS}, 0 decides every line as it comes.
   */
  readonly reorderWindowMs?: number;
  /**
   * Sees every request with its decision under `config` (a promise for one that waited in a queue). A verdict
   * given as it is is read during the call only: its decision is given back to the store afterwards (D-G171).
   */
  readonly onDecision?: (r: LogRecord, v: Verdict | Promise<Verdict>) => void;
  /**
   * Called when the replay starts over from the first line (a line later than its first, short window): what
   * `onDecision` saw is to be forgotten. Without it, a replay with `onDecision` holds the whole window from the
   * start.
   */
  readonly onRestart?: () => void;
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
  /** How the lines were put back in time order. */
  readonly order: LineOrder;
}

/** How a replay put its lines back in time order ({@link ReorderWindow}). */
export interface LineOrder {
  /** The reorder window: how late a line may be and still be decided in time order. */
  readonly windowSeconds: number;
  /** Lines earlier than a line before them, put back in time order. */
  readonly reordered: number;
  /** Lines earlier than a line already decided (beyond the window): decided at the later time. */
  readonly late: number;
  /** The most a late line was earlier than the newest line before it: the window that would have ordered it. */
  readonly maxLateSeconds: number;
  /** Lines decided before their window passed because the window held its most lines (a very busy log). */
  readonly early: number;
}

/**
 * Replays logs through one configuration (and a second one with `against`), from empty buckets, one request at a
 * time at its line's time. Several logs are merged by time, as one log sorted by time would be read (requests of
 * the same second in the order the logs were given): rotated files in any order (`access.log access.log.1`, as a
 * shell lists them), or one log per server of a fleet that shared its limits. One log is read straight through.
 * Within a log, lines are put back in time order within a window (web servers stamp a request with its start and
 * write its line at its end), so the decisions are a live gateway's for the same requests.
 *
 * @returns the engines (their counts) and the logs' statistics, once every queued request has settled.
 */
export async function runReplay(o: ReplayRunOptions): Promise<ReplayRun> {
  const windowMs = o.reorderWindowMs ?? DEFAULT_REORDER_WINDOW_MS;
  // Holding lines for the whole window costs an ordered log a seventh of its CPU (docs/benchmarks.md, the run log
  // of 2026-12-07). A log that can be read again is first replayed with a short window; the first line later than
  // it allows starts the replay over with the whole window. Both give the same decisions: with no line late, either window lets the
  // lines go in time order, ties in reading order.
  const restartable = o.onDecision === undefined || o.onRestart !== undefined;
  if (windowMs > FIRST_WINDOW_MS && restartable && o.logs.every((l) => l.readOnce !== true)) {
    const quick = await replayOnce(o, FIRST_WINDOW_MS, windowMs);
    if (quick !== undefined) return quick;
    o.onRestart?.();
  }
  return (await replayOnce(o, windowMs, windowMs)) as ReplayRun;
}

/**
 * The first window of a log that can be read again: long enough for the disorder of several workers writing one log,
 * short enough that the lines it holds die young.
 */
const FIRST_WINDOW_MS = 2000;

/**
 * One replay with a reorder window of `windowMs`; when it is shorter than `reportedMs`, the first line later than it
 * allows stops the replay, which answers `undefined` (the lines decided so far are dropped with its engines).
 */
async function replayOnce(
  o: ReplayRunOptions,
  windowMs: number,
  reportedMs: number,
): Promise<ReplayRun | undefined> {
  const stopOnLate = windowMs < reportedMs;
  let stopped = false;
  const fields = o.fields ?? fieldMap([]);
  const a = new ReplayEngine(o.config.config);
  const b = o.against === undefined ? undefined : new ReplayEngine(o.against.config);
  const flips = b === undefined ? undefined : new FlipTally(a.config.maxTrackedKeys);
  const readers = o.logs.map((log) => new LogLineReader(log.name, o.format, fields));
  // Lines are put back in time order within the window, then decided in batches (D-G64) of one log each: a batch
  // goes to the engines when full, when the next line is another log's, and at the end. Its records are the
  // window's, given back once decided.
  const window = new ReorderWindow(windowMs);
  const batch: LogRecord[] = new Array(REPLAY_BATCH);
  const lines = new Int32Array(REPLAY_BATCH);
  const outA: (Verdict | Promise<Verdict> | undefined)[] = new Array(REPLAY_BATCH).fill(undefined);
  const outB: (Verdict | Promise<Verdict> | undefined)[] = new Array(REPLAY_BATCH).fill(undefined);
  const onDecision = o.onDecision;
  let batchSource = 0;
  let filled = 0;
  const decideBatch = () => {
    const n = filled;
    if (n === 0) return;
    filled = 0;
    const reader = readers[batchSource];
    const name = reader.stats.name;
    a.admitBatch(batch, n, lines, name, outA);
    b?.admitBatch(batch, n, lines, name, outB);
    for (let i = 0; i < n; i++) {
      const da = outA[i];
      const db = b === undefined ? undefined : outB[i];
      outA[i] = undefined;
      outB[i] = undefined;
      const rec = batch[i];
      // Admission refuses what no request could carry (a cost beyond the engine's range): the line is unknown.
      if (da === undefined || (b !== undefined && db === undefined)) reader.countUnknown(lines[i]);
      else {
        reader.stats.requests++;
        if (db !== undefined) {
          if (!(da instanceof Promise) && !(db instanceof Promise)) flips?.compare(da, db);
          else void Promise.all([da, db]).then(([x, y]) => flips?.compare(x, y));
        }
        onDecision?.(rec, da);
        // Read for the last time (a comparison still waiting on the other verdict reads both later).
        if (!(da instanceof Promise) && !(db instanceof Promise)) {
          a.recycle(da);
          b?.recycle(db);
        }
      }
      window.recycle(rec);
    }
  };
  /** Moves the window's earliest line into the batch. */
  const take = () => {
    const rec = window.head;
    if (rec.source !== batchSource) {
      decideBatch();
      batchSource = rec.source;
    }
    batch[filled] = rec;
    lines[filled++] = window.headLine;
    window.shift();
    if (filled === REPLAY_BATCH) decideBatch();
  };

  // A stopped replay reads no further block.
  const logs = stopOnLate
    ? o.logs.map((l) => ({ ...l, open: () => until(l.open(), () => stopped) }))
    : o.logs;
  if (o.logs.length === 1) {
    const reader = readers[0];
    await readLog(logs[0], reader, (line, no) => {
      if (stopped || !reader.read(line, no, window.slot())) return;
      window.commit(no);
      if (stopOnLate && window.late > 0) stopped = true;
      else while (window.ready) take();
    });
  } else {
    // Each log is read into a ring of its own while the merge takes the earliest first record of them all into the
    // window. The readers run only while the merge awaits.
    const rings = o.logs.map(() => new RecordRing());
    const failures: unknown[] = [];
    const reading = logs.map((log, i) => {
      const reader = readers[i];
      const ring = rings[i];
      return readLog(
        log,
        reader,
        (line, no) => {
          if (reader.read(line, no, ring.slot())) ring.commit(no);
        },
        ring.pace,
      )
        .catch((e: unknown) => {
          failures.push(e);
        })
        .finally(() => ring.finish());
    });
    for (;;) {
      // The earliest first record: every log still being read must show one first. A scan, not a heap: logs
      // are few, and a scan keeps the order of the logs for requests of the same time.
      let best = -1;
      let bestTime = 0;
      for (let i = 0; i < rings.length; i++) {
        const ring = rings[i];
        if (ring.size === 0) {
          if (ring.finished) continue;
          decideBatch();
          await ring.available();
          if (ring.size === 0) continue;
        }
        const t = ring.head.timeMs;
        if (best < 0 || t < bestTime) {
          best = i;
          bestTime = t;
        }
      }
      if (best < 0) break;
      const ring = rings[best];
      if (!stopped) {
        const rec = window.slot();
        rec.copyFrom(ring.head);
        rec.source = best;
        window.commit(ring.headLine);
        if (stopOnLate && window.late > 0) stopped = true;
        else while (window.ready) take();
      }
      // Once stopped, the rings are emptied until their readers see the end.
      ring.shift();
    }
    await Promise.all(reading);
    if (failures.length > 0) throw failures[0];
  }
  if (stopped) return undefined;
  while (window.size > 0) take();
  decideBatch();
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
    logs: readers.map((r) => r.stats),
    order: {
      windowSeconds: reportedMs / 1000,
      reordered: window.reordered,
      late: window.late,
      maxLateSeconds: window.maxLateMs / 1000,
      early: window.early,
    },
  };
}

/** The blocks of a log until `stop()` says the replay stopped. */
async function* until(blocks: LogBytes, stop: () => boolean): AsyncGenerator<Buffer | string> {
  for await (const b of blocks) {
    if (stop()) return;
    yield b;
  }
}

/**
 * Reads one log's lines into `onLine` and records what reading found (its line count, gzip, encoding, an error
 * that stopped it, or one that kept it from opening) in the reader's statistics.
 */
async function readLog(
  log: ReplayLog,
  reader: LogLineReader,
  onLine: (line: string | undefined, no: number) => void,
  pace?: () => Promise<void> | undefined,
): Promise<void> {
  const s = reader.stats;
  let input: LogBytes;
  try {
    input = log.open();
  } catch (e) {
    s.error = (e as Error).message;
    return;
  }
  const read: LineSourceResult = await forEachLine(input, onLine, MAX_LINE_CHARS, pace);
  s.lines = read.lines;
  s.gzip = read.gzip;
  if (read.encoding !== undefined) s.encoding = read.encoding;
  if (read.error !== undefined) s.error = read.error;
}
