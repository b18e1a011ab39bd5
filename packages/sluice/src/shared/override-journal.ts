/*
 * The layout of a SharedOverrides buffer: a header of Int32 words, then a journal of records, each a length word
 * and that many bytes of JSON, padded to a whole word. Writers append under the header's lock; a reader keeps the
 * offset it has read up to and reads only what was appended since. When the journal is full it is written again
 * from the start holding only what is still needed (a compaction), and the generation word tells readers that
 * their offset no longer means anything.
 */

/** Header words. */
export const H_LOCK = 0;
export const H_VERSION = 1;
const H_MAGIC = 2;
const H_GENERATION = 3;
const H_END = 4;
/**
 * The bytes a compaction would write now (the rules and the histories kept), kept up to date by every writer: an
 * upper bound, since expired rules count until a write drops them.
 */
export const H_LIVE = 5;
const HEADER_WORDS = 8;
const HEADER_BYTES = HEADER_WORDS * 4;
/** Not the magic of the JSON document layout this one replaced: a buffer of either is never read as the other. */
const MAGIC = 0x0f7e_2802;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The bytes a record of `length` bytes of JSON takes in the journal, its length word included. */
function footprint(length: number): number {
  return 4 + ((length + 3) & ~3);
}

/** One record, encoded once: what a writer hands to {@link OverrideJournal.append} or `replace`. */
export function encodeRecord(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** The bytes `value` takes as one record in the journal. */
export function recordBytes(value: unknown): number {
  return footprint(encodeRecord(value).length);
}

/** The bytes records take in the journal. */
export function journalBytes(records: readonly Uint8Array[]): number {
  let n = 0;
  for (const r of records) n += footprint(r.length);
  return n;
}

/**
 * The journal of one buffer, as one thread sees it. Every method but `header` expects the caller to hold the lock
 * (`H_LOCK` of `header`): a compaction rewrites bytes a reader would otherwise be copying.
 */
export class OverrideJournal {
  /** The header words: the lock and the version, read by the store. */
  readonly header: Int32Array;
  readonly #words: Int32Array;
  readonly #bytes: Uint8Array;
  /** Bytes the journal holds at most. */
  readonly capacity: number;

  /**
   * @param buffer - a buffer of {@link OverrideJournal.allocate}, or one to attach to.
   * @returns undefined when `buffer` is not such a buffer.
   */
  static attach(buffer: SharedArrayBuffer): OverrideJournal | undefined {
    if (buffer.byteLength <= HEADER_BYTES || buffer.byteLength % 4 !== 0) return undefined;
    const journal = new OverrideJournal(buffer);
    return Atomics.load(journal.header, H_MAGIC) === MAGIC ? journal : undefined;
  }

  /** A new buffer whose journal holds `bytes` (rounded up to a whole word). */
  static allocate(bytes: number): OverrideJournal {
    const journal = new OverrideJournal(new SharedArrayBuffer(HEADER_BYTES + ((bytes + 3) & ~3)));
    Atomics.store(journal.header, H_MAGIC, MAGIC);
    return journal;
  }

  private constructor(readonly buffer: SharedArrayBuffer) {
    this.header = new Int32Array(buffer, 0, HEADER_WORDS);
    this.#words = new Int32Array(buffer);
    this.#bytes = new Uint8Array(buffer);
    this.capacity = buffer.byteLength - HEADER_BYTES;
  }

  /** Grows by one at every compaction. */
  get generation(): number {
    return this.header[H_GENERATION];
  }

  /** The offset where the next record goes: every record before it is complete. */
  get end(): number {
    return this.header[H_END];
  }

  /** Calls `visit` with each record from offset `from` to `to` (both record boundaries), parsed, in order. */
  read(from: number, to: number, visit: (record: unknown) => void): void {
    for (let at = from; at < to; ) {
      const start = HEADER_BYTES + at;
      const length = this.#words[start >> 2];
      // A copy: TextDecoder refuses views over shared memory.
      visit(JSON.parse(decoder.decode(this.#bytes.slice(start + 4, start + 4 + length))));
      at += footprint(length);
    }
  }

  /** Appends records after the last one; false, writing nothing, when they do not fit. */
  append(records: readonly Uint8Array[]): boolean {
    const at = this.end;
    if (at + journalBytes(records) > this.capacity) return false;
    this.header[H_END] = this.#put(at, records);
    return true;
  }

  /**
   * Writes the journal again from the start with these records only (a compaction), and tells readers so by the
   * generation; false, writing nothing, when they do not fit.
   */
  replace(records: readonly Uint8Array[]): boolean {
    if (journalBytes(records) > this.capacity) return false;
    this.header[H_END] = this.#put(0, records);
    this.header[H_GENERATION]++;
    return true;
  }

  #put(from: number, records: readonly Uint8Array[]): number {
    let at = from;
    for (const r of records) {
      const start = HEADER_BYTES + at;
      this.#words[start >> 2] = r.length;
      this.#bytes.set(r, start + 4);
      at += footprint(r.length);
    }
    return at;
  }
}
