import { LogRecord } from './log-record.js';

/** Records a log's reader may hold ahead of the merge before it waits: a few reads' worth. */
const HIGH_WATER = 2048;
/** Records left when a waiting reader goes on. */
const LOW_WATER = 512;

/**
 * The records one log's reader has parsed and the merge has not yet decided, in line order: a ring of records
 * reused as it turns (no object per line), which grows when a read holds more lines than it has room for. The
 * reader waits once it holds {@link HIGH_WATER} records, so memory stays bounded whatever the logs' lengths.
 */
export class RecordRing {
  // Small at first: a ring grows to what its log's reads hold (a few thousand records), and a short log's stays
  // small. A small ring also turns over within a short log, so the merge's tests see a record reused.
  #records: LogRecord[] = Array.from({ length: 16 }, () => new LogRecord());
  #lines = new Int32Array(16);
  #head = 0;
  #size = 0;
  #finished = false;
  /** The merge, waiting for a record or the end. */
  #wake: (() => void) | undefined;
  /** The reader, waiting for room. */
  #resume: (() => void) | undefined;

  /** Records held. */
  get size(): number {
    return this.#size;
  }

  /** True once the reader has read the whole log (or failed). */
  get finished(): boolean {
    return this.#finished;
  }

  /** The record the next line is read into: a request only once {@link RecordRing.commit} takes it. */
  slot(): LogRecord {
    if (this.#size === this.#records.length) this.#grow();
    const cap = this.#records.length;
    return this.#records[(this.#head + this.#size) % cap];
  }

  /**
   * Takes the record {@link RecordRing.slot} gave as the next request.
   *
   * @param line - its line number.
   */
  commit(line: number): void {
    const cap = this.#records.length;
    this.#lines[(this.#head + this.#size) % cap] = line;
    this.#size++;
    this.#wakeMerge();
  }

  /** The first record held (its time decides the merge's order); only while {@link RecordRing.size} is not 0. */
  get head(): LogRecord {
    return this.#records[this.#head];
  }

  /** The first record's line number. */
  get headLine(): number {
    return this.#lines[this.#head];
  }

  /**
   * Drops the first record. The record itself stays valid until the reader runs again, which it does only while
   * the merge awaits.
   */
  shift(): void {
    this.#head = (this.#head + 1) % this.#records.length;
    this.#size--;
    if (this.#resume !== undefined && this.#size <= LOW_WATER) {
      const r = this.#resume;
      this.#resume = undefined;
      r();
    }
  }

  /** For the reader, before each read: a promise to await while the ring is full, else `undefined`. */
  pace = (): Promise<void> | undefined => {
    if (this.#size < HIGH_WATER) return undefined;
    return new Promise<void>((resolve) => {
      this.#resume = resolve;
    });
  };

  /** Marks the log read to its end. */
  finish(): void {
    this.#finished = true;
    this.#wakeMerge();
  }

  /** For the merge: resolves when a record comes or the log ends (at once if either is already so). */
  available(): Promise<void> {
    if (this.#size > 0 || this.#finished) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#wake = resolve;
    });
  }

  #wakeMerge(): void {
    const w = this.#wake;
    if (w !== undefined) {
      this.#wake = undefined;
      w();
    }
  }

  #grow(): void {
    const cap = this.#records.length;
    const records: LogRecord[] = new Array(cap * 2);
    const lines = new Int32Array(cap * 2);
    for (let i = 0; i < cap; i++) {
      records[i] = this.#records[(this.#head + i) % cap];
      lines[i] = this.#lines[(this.#head + i) % cap];
    }
    for (let i = cap; i < cap * 2; i++) records[i] = new LogRecord();
    this.#records = records;
    this.#lines = lines;
    this.#head = 0;
  }
}
