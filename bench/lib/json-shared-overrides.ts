/*
 * The shared-memory override store as it was before its journal (D-G110): the rules and the history as one JSON
 * document in the buffer, written whole and read whole on every change. Kept for bench/override-writes.bench.ts
 * only, to time the journal against it in the same run; not shipped, not used by any test.
 */
import {
  EMPTY_OVERRIDES,
  ErrorCode,
  integerOption,
  invalidOption,
  keepsOverride,
  type OverrideChange,
  type OverrideRule,
  type OverrideSnapshot,
  type OverrideStore,
  type OverrideWriteOptions,
  readStoredOverride,
  SluiceError,
  withChange,
  withOverride,
} from '../../packages/sluice/src/core/index.js';
import { mergeHistories, withAutomaticChange } from '../../packages/sluice/src/core/override-writes.js';
import { lock, unlock } from '../../packages/sluice/src/shared/group-lock.js';

/** Header words: the writers' lock, the version, the byte length of the JSON, a magic number. */
const H_LOCK = 0;
const H_VERSION = 1;
const H_LENGTH = 2;
const H_MAGIC = 3;
const HEADER_BYTES = 16;
const MAGIC = 0x0f7e_2801;

/** Default room for rules and history: about 10,000 rules and the last 1,000 changes. */
const DEFAULT_OVERRIDE_BYTES = 8 * 1024 * 1024;

interface Stored {
  readonly rules: readonly OverrideRule[];
  /** The operators' changes. */
  readonly history: readonly OverrideChange[];
  /** The automatic changes (penalty blocks), kept apart so that they never push out an operator's. */
  readonly automatic: readonly OverrideChange[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Overrides in a `SharedArrayBuffer`, for the worker threads of one process beside a `SharedStore`: a change
 * made by any thread is seen by every thread at its next decision (a decision reads one Atomics word; a thread
 * decodes the rules again only after a change). Create it in one thread and hand its `buffer` to the others.
 *
 * The rules and the history are kept as JSON in the buffer; writers take a lock, readers copy the bytes under it
 * only when the version moved.
 *
 * @example
 * ```ts
 * const overrides = new SharedOverrides();
 * new Worker(url, { workerData: { overrides: overrides.buffer } }); // there: new SharedOverrides({ buffer })
 * ```
 */
export class JsonSharedOverrides implements OverrideStore {
  readonly kind = 'shared';
  /** The buffer, to pass to other threads. */
  readonly buffer: SharedArrayBuffer;
  readonly #header: Int32Array;
  readonly #bytes: Uint8Array;
  readonly #now: () => number;
  #snapshot = EMPTY_OVERRIDES;

  /**
   * @param options - `buffer`: another instance's buffer to attach to; `bytes`: the room of a new buffer
   * (default {@link DEFAULT_OVERRIDE_BYTES}); `wallClock`: epoch milliseconds for pruning (default `Date.now`).
   * @throws SluiceError `ERR_INVALID_OPTION` for a buffer that is not an overrides buffer or a bad size.
   */
  constructor(
    options: {
      readonly buffer?: SharedArrayBuffer;
      readonly bytes?: number;
      readonly wallClock?: () => number;
    } = {},
  ) {
    this.#now = options.wallClock ?? Date.now;
    if (options.buffer === undefined) {
      const bytes = integerOption('bytes', options.bytes, 1024, 2 ** 30, DEFAULT_OVERRIDE_BYTES);
      this.buffer = new SharedArrayBuffer(HEADER_BYTES + bytes);
      this.#header = new Int32Array(this.buffer, 0, 4);
      Atomics.store(this.#header, H_MAGIC, MAGIC);
    } else {
      const b = options.buffer;
      if (!(b instanceof SharedArrayBuffer) || b.byteLength <= HEADER_BYTES) {
        throw invalidOption('buffer', 'the buffer of a SharedOverrides', b);
      }
      this.buffer = b;
      this.#header = new Int32Array(b, 0, 4);
      if (Atomics.load(this.#header, H_MAGIC) !== MAGIC) {
        throw invalidOption('buffer', 'the buffer of a SharedOverrides', 'another SharedArrayBuffer');
      }
    }
    this.#bytes = new Uint8Array(this.buffer, HEADER_BYTES);
  }

  snapshot(): OverrideSnapshot {
    const v = Atomics.load(this.#header, H_VERSION);
    if (v === this.#snapshot.version) return this.#snapshot;
    lock(this.#header, H_LOCK);
    try {
      const stored = this.#read();
      this.#snapshot = Object.freeze({
        version: Atomics.load(this.#header, H_VERSION),
        rules: Object.freeze(stored.rules),
      });
    } finally {
      unlock(this.#header, H_LOCK);
    }
    return this.#snapshot;
  }

  async set(rule: OverrideRule, change: OverrideChange, options?: OverrideWriteOptions): Promise<boolean> {
    const automatic = options?.automatic === true;
    let written = false;
    // The check and the write under one lock: no thread's operator rule can land between them.
    this.#write((s) => {
      const now = this.#now();
      if (
        automatic &&
        keepsOverride(
          s.rules.find((r) => r.id === rule.id),
          rule,
          now,
        )
      )
        return undefined;
      written = true;
      return {
        rules: withOverride(s.rules, rule, now),
        history: automatic ? s.history : withChange(s.history, change),
        automatic: automatic ? withAutomaticChange(s.automatic, change) : s.automatic,
      };
    });
    return written;
  }

  async remove(id: string, change: OverrideChange): Promise<OverrideRule | undefined> {
    let gone: OverrideRule | undefined;
    this.#write((s) => {
      gone = s.rules.find((r) => r.id === id);
      if (gone === undefined) return undefined;
      return {
        rules: s.rules.filter((r) => r !== gone),
        history: withChange(s.history, { ...change, rule: gone }),
        automatic: s.automatic,
      };
    });
    return gone;
  }

  async history(): Promise<readonly OverrideChange[]> {
    lock(this.#header, H_LOCK);
    try {
      const stored = this.#read();
      return mergeHistories(stored.history, stored.automatic);
    } finally {
      unlock(this.#header, H_LOCK);
    }
  }

  /** Writes `rules` as the whole document at once (a bench's fill, which one write per rule would take hours for). */
  load(rules: readonly OverrideRule[]): void {
    this.#write(() => ({ rules, history: [], automatic: [] }));
  }

  refresh(): void {}

  close(): void {}

  #read(): Stored {
    const n = this.#header[H_LENGTH];
    if (n === 0) return { rules: [], history: [], automatic: [] };
    // A copy: TextDecoder refuses views over shared memory.
    const parsed = JSON.parse(decoder.decode(this.#bytes.slice(0, n))) as Stored;
    const rules: OverrideRule[] = [];
    for (const r of parsed.rules) {
      const ok = readStoredOverride(r);
      if (ok !== undefined) rules.push(ok);
    }
    return { rules, history: parsed.history, automatic: parsed.automatic ?? [] };
  }

  #write(change: (s: Stored) => Stored | undefined): void {
    lock(this.#header, H_LOCK);
    try {
      const next = change(this.#read());
      if (next === undefined) return;
      const bytes = encoder.encode(JSON.stringify(next));
      if (bytes.length > this.#bytes.length) {
        throw new SluiceError(
          ErrorCode.OverridesFull,
          `the overrides take ${bytes.length} bytes, more than the ${this.#bytes.length} of the shared buffer; remove rules or give a larger bytes option`,
          { limit: this.#bytes.length, needed: bytes.length },
        );
      }
      this.#bytes.set(bytes);
      this.#header[H_LENGTH] = bytes.length;
      Atomics.add(this.#header, H_VERSION, 1);
    } finally {
      unlock(this.#header, H_LOCK);
    }
  }
}
