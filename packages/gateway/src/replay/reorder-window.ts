import { LogRecord } from './log-record.js';

/**
 * The default reorder window: Apache and NGINX stamp a request with its start and write its line at its end, so
 * a line is earlier than the lines before it by as long as its request took (up to a minute in public logs: 60 s
 * is the servers' default timeout); twice that leaves room for slow downloads.
 */
export const DEFAULT_REORDER_WINDOW_MS = 120_000;

/**
 * The most lines a window holds, whatever its length: at most a few hundred bytes each with their share of the
 * log's text, so about 100 MB at worst. A log busier than this many lines per window has its earliest lines let go
 * before their window passed (counted in {@link ReorderWindow.early}).
 */
export const MAX_HELD = 1 << 18;

/**
 * Puts a log's requests back in time order within a window: a line is held until a line at least `windowMs` later
 * has been read (or the window is full), and the held lines go in order of time, lines of the same time in the
 * order they were read. A line earlier than one already let go cannot be put back: it goes at once (the replay
 * decides it at the later time) and is counted in {@link ReorderWindow.late}.
 *
 * Records are pooled: {@link ReorderWindow.slot} gives one to read the next line into, and the caller gives each
 * record it took back by {@link ReorderWindow.recycle} once it has decided it, so no object is made per line. The
 * held lines sit in a ring sorted by time: a line in order is appended (the usual case, two comparisons), a late
 * one is placed by a binary search and the few lines after it move up one.
 */
export class ReorderWindow {
  /** Lines read earlier than the newest line before them, put back in order. */
  reordered = 0;
  /** Lines earlier than a line already let go (beyond the window): decided out of order. */
  late = 0;
  /** The most a late line was earlier than the newest line before it, in milliseconds. */
  maxLateMs = 0;
  /** Lines let go before their window passed because the window held {@link MAX_HELD} lines. */
  early = 0;
  readonly #windowMs: number;
  readonly #maxHeld: number;
  #held: LogRecord[] = new Array<LogRecord>(16);
  #times = new Float64Array(16);
  #lines = new Int32Array(16);
  #mask = 15;
  #head = 0;
  #size = 0;
  #newest = Number.NEGATIVE_INFINITY;
  #released = Number.NEGATIVE_INFINITY;
  readonly #free: LogRecord[] = [];
  #next: LogRecord | undefined;
  #records = 0;

  /**
   * @param windowMs - how long a line may be late and still be put in order; 0 lets every line go as it comes.
   * @param maxHeld - the most lines held; default {@link MAX_HELD}.
   */
  constructor(windowMs: number, maxHeld = MAX_HELD) {
    this.#windowMs = windowMs;
    this.#maxHeld = maxHeld;
  }

  /** Lines held. */
  get size(): number {
    return this.#size;
  }

  /** Records made so far (held, being decided, or free): bounded by the window's size and a batch. */
  get records(): number {
    return this.#records;
  }

  /** The record the next line is read into: a request only once {@link ReorderWindow.commit} takes it. */
  slot(): LogRecord {
    let r = this.#next;
    if (r === undefined) {
      r = this.#free.pop();
      if (r === undefined) {
        r = new LogRecord();
        this.#records++;
      }
      this.#next = r;
    }
    return r;
  }

  /**
   * Takes the record {@link ReorderWindow.slot} gave as the next request and holds it in time order.
   *
   * @param line - its line number.
   */
  commit(line: number): void {
    const r = this.#next as LogRecord;
    this.#next = undefined;
    if (this.#size === this.#held.length) this.#grow();
    const t = r.timeMs;
    const mask = this.#mask;
    if (t >= this.#newest) {
      this.#newest = t;
      const at = (this.#head + this.#size) & mask;
      this.#held[at] = r;
      this.#times[at] = t;
      this.#lines[at] = line;
      this.#size++;
      return;
    }
    if (t < this.#released) {
      this.late++;
      if (this.#newest - t > this.maxLateMs) this.maxLateMs = this.#newest - t;
    } else this.reordered++;
    // After every held line of the same time or earlier: the lines of one time keep the order they were read in.
    let lo = 0;
    let hi = this.#size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#times[(this.#head + mid) & mask] <= t) lo = mid + 1;
      else hi = mid;
    }
    for (let i = this.#size; i > lo; i--) {
      const to = (this.#head + i) & mask;
      const from = (to - 1) & mask;
      this.#held[to] = this.#held[from];
      this.#times[to] = this.#times[from];
      this.#lines[to] = this.#lines[from];
    }
    const at = (this.#head + lo) & mask;
    this.#held[at] = r;
    this.#times[at] = t;
    this.#lines[at] = line;
    this.#size++;
  }

  /** True when the earliest held line may go: its window has passed, or the window is full. */
  get ready(): boolean {
    if (this.#size === 0) return false;
    if (this.#times[this.#head] <= this.#newest - this.#windowMs) return true;
    if (this.#size <= this.#maxHeld) return false;
    this.early++;
    return true;
  }

  /** The earliest held record; only while {@link ReorderWindow.size} is not 0. */
  get head(): LogRecord {
    return this.#held[this.#head];
  }

  /** The earliest held record's line number. */
  get headLine(): number {
    return this.#lines[this.#head];
  }

  /** Lets the earliest held record go: the caller decides it, then gives it back by {@link ReorderWindow.recycle}. */
  shift(): void {
    const h = this.#head;
    const t = this.#times[h];
    if (t > this.#released) this.#released = t;
    this.#held[h] = undefined as unknown as LogRecord;
    this.#head = (h + 1) & this.#mask;
    this.#size--;
  }

  /** Gives back a record taken from {@link ReorderWindow.head}, once decided, for a later line. */
  recycle(r: LogRecord): void {
    this.#free.push(r);
  }

  #grow(): void {
    const cap = this.#held.length;
    const held = new Array<LogRecord>(cap * 2);
    const times = new Float64Array(cap * 2);
    const lines = new Int32Array(cap * 2);
    for (let i = 0; i < cap; i++) {
      const from = (this.#head + i) & this.#mask;
      held[i] = this.#held[from];
      times[i] = this.#times[from];
      lines[i] = this.#lines[from];
    }
    this.#held = held;
    this.#times = times;
    this.#lines = lines;
    this.#mask = cap * 2 - 1;
    this.#head = 0;
  }
}
